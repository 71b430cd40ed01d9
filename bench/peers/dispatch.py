#!/usr/bin/env python3
"""A typical Python hook dispatcher, the peer of case (g).

What a team writes when it glues hooks together by hand: read the host's
payload from stdin, load a JSON hook config, match the tool name against
each hook's matcher, spawn every matching hook with the payload on its
stdin, and answer in Claude Code's shape (exit 2 from a hook = deny with
its stderr as the reason; anything else = allow, which is silence).

    python3 dispatch.py CONFIG.json < payload.json

CONFIG.json: {"hooks": {"PreToolUse": [{"matcher": "Read", "command": ["/bin/true"], "timeout": 5}]}}
"""

import json
import re
import subprocess
import sys


def main() -> int:
    config_path = sys.argv[1]
    payload_bytes = sys.stdin.buffer.read()
    payload = json.loads(payload_bytes)
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)

    event = payload.get("hook_event_name", "")
    tool = payload.get("tool_name", "")
    for hook in config.get("hooks", {}).get(event, []):
        matcher = hook.get("matcher", "*")
        if matcher not in ("", "*") and not re.fullmatch(matcher, tool):
            continue
        proc = subprocess.run(
            hook["command"],
            input=payload_bytes,
            capture_output=True,
            timeout=hook.get("timeout", 60),
            check=False,
        )
        if proc.returncode == 2:
            reason = proc.stderr.decode("utf-8", "replace").strip() or "denied by hook"
            json.dump(
                {
                    "hookSpecificOutput": {
                        "hookEventName": event,
                        "permissionDecision": "deny",
                        "permissionDecisionReason": reason,
                    }
                },
                sys.stdout,
            )
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
