"""Debian's nginx as the reverse proxy in front of ``rumble serve``, run as a plain foreground process
on a loopback port with its configuration, logs and temporary files in a test's directory (no
system service). The ``location`` blocks and the removals' rate limits are the README's production
ones (section "Behind a reverse proxy"), without TLS. Used by tests/e2e/test_proxy.py and scripts/hostile_mix.py --proxy.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

NGINX = "/usr/sbin/nginx"
START_TIMEOUT_S = 10

# RemoveOldParticipant: a retirement is rare (a client sends a few an iteration), and rumble answers
# every refusal in a read snapshot, but each request still costs a worker about 0.75 ms of CPU; a
# flood from many addresses would take that from the uploads. nginx holds it to 10 a minute per
# address and 5 a second in all (with bursts), answering the rest 429, which the client only prints.
REMOVAL_ZONES = """\
    limit_req_zone $binary_remote_addr zone=rumble_removals_per_address:1m rate=10r/m;
    limit_req_zone $server_addr zone=rumble_removals:64k rate=5r/s;
"""
REMOVAL_LOCATION = """\
        location = /RemoveOldParticipant {
            limit_req zone=rumble_removals_per_address burst=10 nodelay;
            limit_req zone=rumble_removals burst=20 nodelay;
            limit_req_status 429;
            proxy_pass http://rumble;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
        }
"""
PROXY_LOCATION = """\
        location / {
            proxy_pass http://rumble;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
        }
"""

CONFIG = """\
{user}daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    client_header_timeout 10s;
    client_body_timeout 10s;
    send_timeout 30s;
    keepalive_timeout 5s;
    client_max_body_size 1m;
{zones}    upstream rumble {{
        server {backend_host}:{backend};
        keepalive 16;
    }}
    server {{
        listen {host}:{port};
{location}    }}
}}
"""


def available() -> bool:
    return Path(NGINX).exists() or shutil.which("nginx") is not None


def free_address() -> tuple[str, int]:
    """A loopback address of its own (127.x.y.z, x > 0) and a free port on it: a server listening
    there meets no other run's server, and no client's ephemeral port on 127.0.0.1 (clients that
    connect to it still come from 127.0.0.1). Two test runs side by side, or a benchmark's
    thousands of connections beside one, then never take each other's port."""
    pick = random.SystemRandom()
    host = f"127.{pick.randint(1, 254)}.{pick.randint(0, 255)}.{pick.randint(1, 254)}"
    with socket.socket() as sock:
        sock.bind((host, 0))
        return host, sock.getsockname()[1]


def free_port_on(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_nginx(
    directory: Path, backend_port: int, backend_host: str = "127.0.0.1", listen_host: str | None = None
) -> Iterator[str]:
    """nginx proxying to ``backend_host:backend_port``, on ``listen_host`` (by default a loopback
    address of its own) and a free port; yields its URL; stopped (SIGQUIT, then SIGKILL) after."""
    directory.mkdir(parents=True, exist_ok=True)
    host, port = free_address() if listen_host is None else (listen_host, free_port_on(listen_host))
    config = directory / "nginx.conf"
    user = (
        "user root root;\n" if os.geteuid() == 0 else ""
    )  # else workers run as nobody, who cannot write the temp dirs here
    config.write_text(
        CONFIG.format(
            user=user,
            dir=directory,
            backend_host=backend_host,
            backend=backend_port,
            host=host,
            port=port,
            zones=REMOVAL_ZONES,
            location=REMOVAL_LOCATION + PROXY_LOCATION,
        )
    )
    binary = NGINX if Path(NGINX).exists() else shutil.which("nginx")
    with open(directory / "nginx.out", "wb") as out:
        process = subprocess.Popen(
            [binary, "-c", str(config), "-p", str(directory), "-e", str(directory / "error.log")],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        _wait_for_port(process, host, port, directory)
        yield f"http://{host}:{port}"
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGQUIT)  # graceful stop
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_for_port(process: subprocess.Popen, host: str, port: int, directory: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(
                f"nginx exited with {process.returncode}: {(directory / 'error.log').read_text(errors='replace')}"
            )
        with socket.socket() as sock:
            if sock.connect_ex((host, port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nginx did not listen on {port} within {START_TIMEOUT_S} s")
