#!/bin/sh
# The loopback OTLP receiver's Python environment (tests/otlp/receiver.py):
# the official OpenTelemetry protobuf definitions and the protobuf runtime,
# pinned, in a virtual environment at target/otlp-venv.
set -eu
cd "$(dirname "$0")/../.."
venv=target/otlp-venv
if "$venv/bin/python" -c 'import opentelemetry.proto.collector.logs.v1.logs_service_pb2' 2>/dev/null; then
    exit 0
fi
python3 -m venv "$venv" </dev/null
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    opentelemetry-proto==1.45.2 protobuf==7.36.2 </dev/null
