"""Test (b) of the gateway: when the nearest site is saturated (it answers
429), traffic shifts to the other sites and the goodput across sites beats
any single site's under the same offered load.

Three identical `swiftlet serve` sites, each admitting one running request
and one queued (--max-running 1 --max-queue 1: a site that fills up with
any burst), behind relays of 5/20/80 ms one way. The same open-loop load,
Poisson arrivals at 20 requests/s for 5 s from a fixed seed (32-token
completions), is sent to each site directly and then through the gateway.
Goodput: answers within 2 s per second of sending; refusals count as
misses.

Open loop on purpose: every run asks for the same work, so the two shared
cores do the same amount of it whoever routes it, and the comparison is
about routing. A single site refuses whatever arrives while it is full;
the gateway sends those to another site.

Run by ctest: gateway_overload_test.py SWIFTLET SHARED_DIR.
"""

import http.client
import json
import random
import sys
import threading
import time
import unittest

import testbed

SWIFTLET, SHARED = sys.argv[1:3]
DELAYS = (("near", 5), ("mid", 20), ("far", 80))
RATE = 20.0
SECONDS = 5.0
TARGET_S = 2.0


def arrivals(seed=7):
    rng = random.Random(seed)
    t, out = 0.0, []
    while True:
        t += rng.expovariate(RATE)
        if t >= SECONDS:
            return out
        out.append(t)


def goodput(host, port):
    """The fixed arrival schedule against host:port: (answers within the
    target per second, answers by site, refusals)."""
    lock = threading.Lock()
    good, by_site, refused = [0], {}, [0]
    body = json.dumps({"prompt": "Hello there", "max_tokens": 32, "ignore_eos": True})

    def one():
        start = time.monotonic()
        try:
            c = http.client.HTTPConnection(host, port, timeout=30)
            c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            c.close()
        except (OSError, http.client.HTTPException):
            return
        took = time.monotonic() - start
        with lock:
            if r.status == 200 and took <= TARGET_S:
                good[0] += 1
                site = r.getheader("x-swiftlet-site")
                by_site[site] = by_site.get(site, 0) + 1
            elif r.status == 429:
                refused[0] += 1

    threads = []
    begin = time.monotonic()
    for at in arrivals():
        delay = begin + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # The arrival schedule itself.
        t = threading.Thread(target=one)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    return good[0] / SECONDS, by_site, refused[0]


class Overload(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir, cls.model, cls.sites = testbed.make_bed(SWIFTLET, SHARED, DELAYS, "--max-running", "1",
                                                         "--max-queue", "1")
        flags = []
        for s in cls.sites:
            flags += ["--site", f"{s.name}={s.url}"]
        cls.gateway = testbed.Gateway(SWIFTLET, *flags)

    @classmethod
    def tearDownClass(cls):
        rc, err = cls.gateway.stop()
        for s in cls.sites:
            s.stop()
        assert rc == 0, err

    def test_b_traffic_shifts_and_goodput_beats_any_single_site(self):
        offered = len(arrivals()) / SECONDS
        single = {}
        for s in self.sites:
            rate, _, refused = goodput("127.0.0.1", s.relay.port)
            single[s.name] = rate
            if s.name == "near":
                self.assertGreater(refused, 0, "the load should saturate the nearest site at times")
        rate, by_site, refused = goodput(self.gateway.host, self.gateway.port)
        print(f"offered {offered:.1f}/s; goodput (answers within {TARGET_S} s per second): single sites "
              f"{single}, through the gateway {rate:.1f} by site {by_site}, 429s passed on {refused}",
              file=sys.stderr)
        self.assertGreater(rate, max(single.values()), (single, rate, by_site))
        # Traffic shifted: the near site was full at times, the others took it.
        self.assertGreater(by_site.get("mid", 0) + by_site.get("far", 0), 0, by_site)
        self.assertGreater(self.gateway.metric("swiftlet_gateway_failovers_total", site="near", reason="429"), 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[3:], verbosity=2)
