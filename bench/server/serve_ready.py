"""wait_ready(url): returns once `simkit serve` at url is ready for its collection routes.

The server listens before its collections are open (docs/API.md, "Probes and start-up") and
answers their routes 503 until they are, so a script that starts a server, or finds one just
started, waits on GET /readyz first. Standard library only: every script in bench/server (and
examples/rag, through load_npy) imports it.
"""
import http.client
import sys
import time
import urllib.parse


def wait_ready(url, timeout=600.0):
    """Returns once GET /readyz answers 200. `simkit serve` listens before its collections are
    open and answers their routes 503 until they are, so a client that starts it (or finds it
    just started) waits here first. SystemExit when it is not ready within `timeout` seconds."""
    u = urllib.parse.urlparse(url)
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=10)
        try:
            conn.request("GET", "/readyz", headers={"Connection": "close"})
            resp = conn.getresponse()
            last = f"{resp.status} {resp.read()[:200]!r}"
            if resp.status == 200:
                return
        except (OSError, http.client.HTTPException) as e:
            last = repr(e)
        finally:
            conn.close()
        time.sleep(0.05)
    sys.exit(f"{url} is not ready within {timeout:.0f} s (last /readyz: {last})")
