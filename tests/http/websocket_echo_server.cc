// A WebSocket echo server on HttpServer, for peers written in other
// languages (tests/http/websocket_peer_test.py drives it with Python's
// `websockets`). Prints "port N" once listening; stops when stdin closes.
//
//   websocket_echo_server [--max-message-bytes N] [--ping-ms N]
//
// At /echo: an upgrade is accepted (403 if Origin is
// https://blocked.example) and every text message is echoed, except
//   "query?"            answered with the request's query string
//   "close:CODE:REASON" the server closes with CODE and REASON
// A plain GET /echo gets 200 "plain"; anything else 404.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "http/server.h"
#include "http/websocket.h"

namespace {

using swiftlet::http::Headers;
using swiftlet::http::HttpRequest;
using swiftlet::http::ResponseWriter;
using swiftlet::http::WebSocket;
using swiftlet::http::WebSocketHandlers;
using swiftlet::http::WebSocketOptions;

void Serve(const WebSocketOptions& options, const HttpRequest& request, ResponseWriter& writer) {
  if (request.path != "/echo") {
    writer.Respond(404, {}, "not found");
    return;
  }
  if (!swiftlet::http::IsWebSocketUpgrade(request)) {
    writer.Respond(200, Headers{{"Content-Type", "text/plain"}}, "plain");
    return;
  }
  if (request.headers.Get("origin") == "https://blocked.example") {
    writer.Respond(403, Headers{{"Content-Type", "text/plain"}}, "origin not allowed");
    return;
  }
  // The handlers hold the socket; it is released after on_close.
  auto socket = std::make_shared<std::shared_ptr<WebSocket>>();
  WebSocketHandlers handlers;
  handlers.on_message = [socket, query = request.query](std::string text) {
    WebSocket& ws = **socket;
    if (text == "query?") {
      ws.SendText(query);
    } else if (text.rfind("close:", 0) == 0) {
      size_t colon = text.find(':', 6);
      int code = std::atoi(text.substr(6, colon - 6).c_str());
      ws.Close(code, colon == std::string::npos ? "" : text.substr(colon + 1));
    } else {
      ws.SendText(std::move(text));
    }
  };
  *socket = writer.AcceptWebSocket(options, std::move(handlers));
}

}  // namespace

int main(int argc, char** argv) {
  WebSocketOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const long value = std::atol(argv[i + 1]);
    if (std::strcmp(argv[i], "--max-message-bytes") == 0 && value > 0) {
      options.max_message_bytes = static_cast<size_t>(value);
    } else if (std::strcmp(argv[i], "--ping-ms") == 0 && value > 0) {
      options.ping_interval = std::chrono::milliseconds(value);
    } else {
      std::fprintf(stderr, "usage: %s [--max-message-bytes N] [--ping-ms N]\n", argv[0]);
      return 2;
    }
  }
  swiftlet::http::HttpServerOptions server_options;
  server_options.port = 0;
  swiftlet::http::HttpServer server(
      server_options, [options](HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
        Serve(options, request, *writer);
      });
  if (absl::Status s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("port %u\n", static_cast<unsigned>(server.port()));
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  server.Stop(std::chrono::milliseconds(500));
  return 0;
}
