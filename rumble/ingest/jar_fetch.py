"""A bot's jar fetched once from the URL its author gives (``POST /Participants/enter`` with ``url``).

The server fetches for a competitor who has a token, so the fetch is what a stranger on the
internet could make this machine do: only ``http://`` and ``https://`` URLs, on a host whose every
address is public (never loopback, a private network, link-local or the like, so that a URL cannot
reach this machine's or its network's services), connected to the very address that was checked (a
name that resolves differently the second time gains nothing), at most ``REDIRECTS`` redirects,
each checked the same way, no content encoding, at most ``limit`` bytes read, and the whole fetch,
the host name's lookups included, within ``timeout`` seconds. Each refusal says what was wrong
(``JarRefused``).

The standard library's ``http.client`` does the HTTP; only its documented ``connect`` is replaced,
to connect to the checked address (with TLS verified against the URL's host name).
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import selectors
import socket
import ssl
import threading
import time
from urllib.parse import urljoin, urlsplit

from rumble.ingest.jar_check import JarRefused

REDIRECTS = 3
BLOCK = 64 * 1024
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Host name lookups under way at once in this process. The system's resolver has no timeout of the
# caller's, so each lookup runs in a thread of its own, which the fetch stops waiting for at its
# deadline; the thread ends when the resolver gives up (its own timeouts: seconds to a minute). A
# name server that never answers thus holds a thread each time: at most this many.
LOOKUPS_AT_ONCE = 8
_lookups = threading.BoundedSemaphore(LOOKUPS_AT_ONCE)


class _Pinned(http.client.HTTPConnection):
    """An HTTP(S) connection to ``address``, for the URL's ``host`` (its Host header and, with
    ``context``, the name its TLS certificate must bear)."""

    def __init__(self, host: str, address: str, port: int, timeout: float, context: ssl.SSLContext | None) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address, self.context = address, context
        self.default_port = 443 if context is not None else 80  # the Host header omits the scheme's own port

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = sock if self.context is None else self.context.wrap_socket(sock, server_hostname=self.host)


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_global and not ip.is_multicast and (mapped is None or mapped.is_global)


def _address(host: str, port: int, private_ok: bool, deadline: float, timeout: float) -> str:
    """The address to connect to for ``host``: the first it resolves to, once every one is public."""
    try:
        found = _lookup(host, port, deadline - time.monotonic())
    except TimeoutError:
        raise JarRefused(f"fetching the jar took longer than {timeout:g} s (looking up {host[:80]!r})") from None
    except (OSError, UnicodeError):
        raise JarRefused(f"the jar URL's host {host[:80]!r} could not be resolved") from None
    addresses = [str(info[4][0]) for info in found]
    if not addresses:
        raise JarRefused(f"the jar URL's host {host[:80]!r} could not be resolved")
    if not private_ok and not all(_public(address) for address in addresses):
        raise JarRefused(f"the jar URL's host {host[:80]!r} is not on the public internet")
    return addresses[0]


def _lookup(host: str, port: int, within: float) -> list:
    """``socket.getaddrinfo``'s answer for ``host`` within ``within`` seconds (``TimeoutError``
    otherwise), from a thread of its own (``LOOKUPS_AT_ONCE``). The wait is on a pipe the thread
    writes to when done, through ``selectors`` (looked up at each call: under gevent's worker, which
    patches it, only the request's greenlet waits), with a relative timeout."""
    if within <= 0:
        raise TimeoutError
    if not _lookups.acquire(blocking=False):
        raise JarRefused(f"{LOOKUPS_AT_ONCE} jar URLs' hosts are being looked up already; try again in a minute")
    told, tell = os.pipe()
    outcome: dict = {}

    def look() -> None:
        try:
            outcome["found"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except BaseException as error:  # handed to the waiting fetch, if it still waits
            outcome["error"] = error
        finally:
            _lookups.release()
            try:
                os.write(tell, b".")
            except OSError:  # the fetch stopped waiting and closed its end
                pass
            os.close(tell)

    try:
        threading.Thread(target=look, name="rumble-jar-lookup", daemon=True).start()
    except RuntimeError:  # no thread to be had now
        _lookups.release()
        os.close(tell)
        os.close(told)
        raise JarRefused("the server cannot look up the jar URL's host now; try again in a minute") from None
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(told, selectors.EVENT_READ)
            ready = selector.select(within)
    finally:
        os.close(told)
    if not ready:
        raise TimeoutError
    if "error" in outcome:
        raise outcome["error"]
    return outcome["found"]


def fetch_jar(url: str, limit: int, timeout: float, private_ok: bool = False) -> bytes:
    """The body of ``url`` (following up to REDIRECTS redirects): at most ``limit`` bytes, within
    ``timeout`` seconds in all; ``JarRefused`` saying why otherwise."""
    deadline = time.monotonic() + timeout
    for _ in range(REDIRECTS + 1):
        try:
            parts = urlsplit(url)
        except ValueError:  # an unclosed IPv6 bracket, say
            raise JarRefused("the jar URL cannot be read as a URL") from None
        try:
            port = parts.port
        except ValueError:
            raise JarRefused("the jar URL's port is not a number from 0 to 65535") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise JarRefused("the jar URL must be an http:// or https:// URL with a host")
        if parts.username is not None or parts.password is not None:
            raise JarRefused("the jar URL must not carry a user name or password")
        https = parts.scheme == "https"
        port = port or (443 if https else 80)
        address = _address(parts.hostname, port, private_ok, deadline, timeout)
        left = deadline - time.monotonic()
        if left <= 0:
            raise JarRefused(f"fetching the jar took longer than {timeout:g} s")
        context = ssl.create_default_context() if https else None
        connection = _Pinned(parts.hostname, address, port, left, context)
        try:
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            connection.request(
                "GET", target, headers={"User-Agent": "rumble (jar fetch)", "Accept-Encoding": "identity"}
            )
            response = connection.getresponse()
            if response.status in REDIRECT_STATUSES and response.getheader("Location"):
                url = urljoin(url, response.getheader("Location", ""))
                continue
            if response.status != 200:
                raise JarRefused(f"the jar URL answered {response.status} {response.reason}"[:120])
            encoding = (response.getheader("Content-Encoding") or "identity").strip().lower()
            if encoding != "identity":
                raise JarRefused(f"the jar URL sent it with Content-Encoding {encoding[:40]!r}; a jar is sent as it is")
            blocks, size = [], 0
            while size <= limit:
                if time.monotonic() > deadline:
                    raise JarRefused(f"fetching the jar took longer than {timeout:g} s")
                block = response.read1(min(BLOCK, limit + 1 - size))  # what has arrived, so the deadline is checked
                if not block:
                    break
                blocks.append(block)
                size += len(block)
            if size > limit:
                raise JarRefused(f"the jar at the URL is larger than {limit} bytes (MAX_JAR_BYTES)")
            return b"".join(blocks)
        except UnicodeError:  # a character outside ASCII in the path or query
            raise JarRefused("the jar URL must be ASCII: percent-encode its other characters") from None
        except TimeoutError:
            raise JarRefused(f"fetching the jar took longer than {timeout:g} s") from None
        except ssl.SSLError as error:
            raise JarRefused(f"the jar URL's TLS failed: {error.reason or error}"[:160]) from None
        except (OSError, http.client.HTTPException) as error:
            raise JarRefused(f"the jar URL could not be fetched: {type(error).__name__}"[:160]) from None
        finally:
            connection.close()
    raise JarRefused(f"the jar URL redirected more than {REDIRECTS} times")
