#!/usr/bin/env python3
"""A git server on loopback over smart HTTP, no auth: Debian's `git http-backend` (CGI)
behind the standard library's threaded WSGI server.

Usage: git_http.py ROOT [PORT [HOST]]   serves the bare repositories under ROOT on HOST
(127.0.0.1 by default; e2e/kind/walkthrough.sh gives the kind network's gateway, which the
cluster's pods reach) and PORT (0, the default: a free one); prints `http://HOST:PORT/`
when listening, and serves until killed. A repository ROOT/podinfo.git is
http://HOST:PORT/podinfo.git.
"""
import os
import subprocess
import sys
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

ROOT = os.path.abspath(sys.argv[1])
PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 0
HOST = sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1"
BACKEND = os.path.join(
    subprocess.check_output(["git", "--exec-path"], text=True).strip(), "git-http-backend"
)


def app(environ, start_response):
    env = {k: v for k, v in environ.items() if isinstance(v, str)}
    env.update(GIT_PROJECT_ROOT=ROOT, GIT_HTTP_EXPORT_ALL="1", REMOTE_USER="anonymous")
    if "HTTP_GIT_PROTOCOL" in environ:
        env["GIT_PROTOCOL"] = environ["HTTP_GIT_PROTOCOL"]
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    cgi = subprocess.run([BACKEND], input=body, env=env, capture_output=True)
    head, sep, out = cgi.stdout.partition(b"\r\n\r\n")
    if not sep:
        head, sep, out = cgi.stdout.partition(b"\n\n")
    status, headers = "200 OK", []
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = value.strip()
        elif name:
            headers.append((name, value.strip()))
    if cgi.returncode != 0 and not sep:
        status, headers, out = "500 Internal Server Error", [], cgi.stderr
    start_response(status, headers)
    return [out]


class Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class Handler(WSGIRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write("%s\n" % (fmt % args))


server = make_server(HOST, PORT, app, server_class=Server, handler_class=Handler)
print("http://%s:%d/" % (HOST, server.server_port), flush=True)
server.serve_forever()
