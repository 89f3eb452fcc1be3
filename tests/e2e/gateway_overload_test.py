"""Test (b) of the gateway: when the nearest site is saturated (it answers
429), traffic shifts to the other sites and the goodput across sites beats
any single site's under the same offered load.

Three identical `swiftlet serve` sites, each admitting one running request
and one queued (--max-running 1 --max-queue 1: a site that fills up fast,
on two shared cores), behind relays of 5/20/80 ms one way. The same
closed-loop load (6 clients, 32-token completions) runs against each site
directly and through the gateway. Goodput: answers within 2 s per second;
refusals count as misses.

The three sites share two cores with each other and with whatever else
runs on the machine, so the aggregate can beat one site by less than the
3x separate machines would give; the nearest site and the gateway are
measured twice, interleaved, so a change in the machine's other load
between measurements does not decide the comparison.

Run by ctest: gateway_overload_test.py SWIFTLET SHARED_DIR.
"""

import http.client
import json
import sys
import threading
import time
import unittest

import testbed

SWIFTLET, SHARED = sys.argv[1:3]
DELAYS = (("near", 5), ("mid", 20), ("far", 80))
CLIENTS = 6
SECONDS = 3.0
TARGET_S = 2.0


def goodput(host, port, seconds=SECONDS):
    """Closed loop for `seconds`: (answers within the target per second, by site, 429s seen)."""
    lock = threading.Lock()
    good, by_site, refused = [0], {}, [0]
    stop_at = time.monotonic() + seconds

    def client():
        c = http.client.HTTPConnection(host, port, timeout=30)
        body = json.dumps({"prompt": "Hello there", "max_tokens": 32, "ignore_eos": True})
        while time.monotonic() < stop_at:
            start = time.monotonic()
            try:
                c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
            except (OSError, http.client.HTTPException):
                c.close()
                c = http.client.HTTPConnection(host, port, timeout=30)
                continue
            took = time.monotonic() - start
            with lock:
                if r.status == 200 and took <= TARGET_S:
                    good[0] += 1
                    site = r.getheader("x-swiftlet-site")
                    by_site[site] = by_site.get(site, 0) + 1
                elif r.status == 429:
                    refused[0] += 1
                    # A direct client would honour Retry-After; the closed
                    # loop instead keeps the offered load, a refusal a miss.
        c.close()

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return good[0] / seconds, by_site, refused[0]


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
        single = {}
        for s in self.sites[1:]:
            rate, _, refused = goodput("127.0.0.1", s.relay.port)
            single[s.name] = rate
            self.assertGreater(refused, 0, f"{s.name} alone should be saturated by this load")
        near, through, by_site, refused = [], [], {}, 0
        # Two interleaved pairs; a third when the first two disagree with
        # the expectation, since a burst of someone else's work on the two
        # cores during one measurement can decide a close comparison.
        for pair in range(3):
            if pair == 2 and sum(through) / 2 > max(max(single.values()), sum(near) / 2):
                break
            rate, _, near_refused = goodput("127.0.0.1", self.sites[0].relay.port)
            self.assertGreater(near_refused, 0, "near alone should be saturated by this load")
            near.append(rate)
            rate, sites, r = goodput(self.gateway.host, self.gateway.port)
            through.append(rate)
            refused += r
            for k, v in sites.items():
                by_site[k] = by_site.get(k, 0) + v
        single["near"] = sum(near) / len(near)
        rate = sum(through) / len(through)
        print(f"goodput (answers within {TARGET_S} s per second): single sites {single}, "
              f"through the gateway {rate:.1f} by site {by_site}, 429s passed on {refused}", file=sys.stderr)
        self.assertGreater(rate, max(single.values()), (single, rate, by_site))
        # Traffic shifted: the near site was full, the others answered too.
        self.assertGreater(by_site.get("mid", 0) + by_site.get("far", 0), 0, by_site)
        self.assertGreater(self.gateway.metric("swiftlet_gateway_failovers_total", site="near", reason="429"), 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[3:], verbosity=2)
