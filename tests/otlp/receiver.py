#!/usr/bin/env python3
"""A loopback OTLP/HTTP receiver for the exporter's tests.

Decodes every request with the official OpenTelemetry protobuf definitions
(the `opentelemetry-proto` package) and appends it, as JSON, to --out: one
line per request, {"path": ..., "request": MessageToDict(...)}. A body that
does not decode is answered 400 and recorded as {"path": ..., "error": ...}.

--answer STATUS answers every request with that status (recording nothing);
--partial N answers 200 with a partial success rejecting N items;
--stop-after K answers K requests and then exits, as a collector that goes
down between two batches. Prints "listening PORT" once it accepts.
"""

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2

REQUESTS = {
    "/v1/logs": (
        logs_service_pb2.ExportLogsServiceRequest,
        logs_service_pb2.ExportLogsServiceResponse,
        "rejected_log_records",
    ),
    "/v1/metrics": (
        metrics_service_pb2.ExportMetricsServiceRequest,
        metrics_service_pb2.ExportMetricsServiceResponse,
        "rejected_data_points",
    ),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--answer", type=int, default=200)
    ap.add_argument("--partial", type=int, default=0)
    ap.add_argument("--stop-after", type=int, default=0)
    args = ap.parse_args()
    answered = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, status, body=b""):
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            known = REQUESTS.get(self.path)
            if args.answer != 200:
                self.reply(args.answer, b"the test collector refuses")
            elif known is None:
                self.reply(404)
            elif self.headers.get("Content-Type") != "application/x-protobuf":
                self.reply(415)
            else:
                request_type, response_type, rejected = known
                entry = {
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                }
                try:
                    msg = request_type()
                    msg.ParseFromString(body)
                    entry["request"] = MessageToDict(msg)
                    status = 200
                except Exception as e:  # noqa: BLE001 - any decode failure is the finding
                    entry["error"] = str(e)
                    status = 400
                response = response_type()
                if args.partial and status == 200:
                    setattr(response.partial_success, rejected, args.partial)
                    response.partial_success.error_message = "the test collector drops some"
                with open(args.out, "a") as f:
                    f.write(json.dumps(entry) + "\n")
                self.reply(status, response.SerializeToString() if status == 200 else b"undecodable")
            answered[0] += 1
            if args.stop_after and answered[0] >= args.stop_after:
                self.server.stopping = True

    server = HTTPServer(("127.0.0.1", args.port), Handler)
    server.stopping = False
    print(f"listening {server.server_address[1]}", flush=True)
    while not server.stopping:
        server.handle_request()
    server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
