"""The local viewer: an aiohttp server on the loopback, one page per request.

Each request opens the warehouse read-only and closes it again, so ``review import`` or an
ingest can write while the viewer runs. Pages are rendered in a worker thread (DuckDB and
Jinja are blocking). Only loopback addresses are served unless ``--allow-remote``; requests
whose Host header names another machine are refused (a page elsewhere cannot reach the
viewer through DNS rebinding), and a review is recorded only with the form's per-server
token (docs/viewer.md, docs/security.md).
"""

from __future__ import annotations

import asyncio
import ipaddress
import secrets
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from aiohttp import web

from viewer import pages, queries, render, review, site, trialpages
from viewer.errors import ViewerError

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
                               "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host(host: str, allow_remote: bool) -> str | None:
    """A warning for a remote address allowed on purpose; raises for one not allowed."""
    if is_loopback(host):
        return None
    if not allow_remote:
        raise ViewerError(f"--host {host} is not a loopback address: the viewer shows evidence and records "
                          "reviews without any login; add --allow-remote to serve it beyond this machine")
    return (f"warning: serving on {host}: anyone who can reach this address can read every trial's "
            "evidence and record reviews; there is no login")


class Viewer:
    """Routes a request path to a page function (``viewer.site.route``)."""

    def __init__(self, opts: pages.Options, host: str, allow_remote: bool) -> None:
        self.opts = opts
        self.host = host
        self.allow_remote = allow_remote
        self.port = 0
        self.lock = threading.Lock()

    def host_ok(self, header: str | None) -> bool:
        if self.allow_remote:
            return True
        if not header:
            return False
        name = header.rsplit(":", 1)[0] if not header.endswith("]") else header
        return is_loopback(name) and header.endswith(f":{self.port}")

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if not self.host_ok(request.headers.get("Host")):
            return web.Response(status=421, text="this viewer answers on its loopback address only\n")
        route = site.route(request.match_info["path"])
        if route is None:
            return self._html(404, self._call(lambda con: pages.not_found(self.opts, site.RUNS, "such page")))
        if route.kind == "static":
            body, kind = ((render.stylesheet(), "text/css") if route.segments["name"].endswith(".css")
                          else (render.script(), "text/javascript"))
            return web.Response(text=body, content_type=kind, headers=HEADERS)
        if route.kind == "review":
            if request.method != "POST":
                return web.Response(status=405, text="record a review with the form on the trial page\n")
            form = {k: str(v) for k, v in (await request.post()).items()}
            return await asyncio.to_thread(self._review, route.segments, form)
        if request.method not in ("GET", "HEAD"):
            return web.Response(status=405, text="read-only page\n")
        query = dict(request.query)
        status, body = await asyncio.to_thread(self._call, lambda con: self._page(con, route, query))
        if route.kind == "file":
            return web.Response(status=status, text=body, content_type="text/plain", headers=HEADERS)
        return self._html(status, (status, body))

    def _html(self, status: int, result: tuple[int, str]) -> web.Response:
        return web.Response(status=result[0], text=result[1], content_type="text/html", headers=HEADERS)

    def _call(self, fn: Callable[[Any], tuple[int, str]]) -> tuple[int, str]:
        from warehouse import db

        con = db.open(self.opts.db_path, read_only=True)
        try:
            return fn(con)
        finally:
            con.close()

    def _page(self, con: Any, route: site.Route, query: dict[str, str]) -> tuple[int, str]:
        seg = route.segments
        if route.kind == "runs":
            return pages.runs_page(con, self.opts)
        if route.kind == "trials":
            return pages.trials_page(con, self.opts, queries.TrialFilter.from_query(query))
        if route.kind == "queues":
            return pages.queues_page(con, self.opts)
        run = queries.resolve(con, "run", seg["run"])
        if run is None:
            return pages.not_found(self.opts, site.RUNS, "such run")
        if route.kind == "run":
            return pages.run_page(con, self.opts, run)
        if route.kind == "config":
            return pages.config_page(con, self.opts, run, queries.resolve(con, "config", seg["config"], run) or "")
        if route.kind == "task":
            return pages.task_page(con, self.opts, run, queries.resolve(con, "case", seg["case"], run) or "")
        trial = queries.resolve(con, "trial", seg["trial"], run) or ""
        if route.kind == "trial":
            line = query.get("recorded")
            note = (f"recorded as line {line} of {self.opts.review.file}" if line and self.opts.review else None)
            return trialpages.trial_page(con, self.opts, run, trial, message=note)
        if route.kind == "file":
            rel = "/".join(site.unslug(p)[0] or "" for p in seg["rel"].split("/"))
            return trialpages.file_text(con, self.opts, run, trial, rel)
        other_run = queries.resolve(con, "run", seg["other_run"]) or ""
        other = queries.resolve(con, "trial", seg["other"], other_run) or ""
        return trialpages.compare_page(con, self.opts, run, trial, other_run, other)

    def _review(self, seg: dict[str, str], form: dict[str, str]) -> web.Response:
        setup = self.opts.review
        if setup is None or setup.file is None:
            return web.Response(status=403, text="read-only viewer: start it with --reviews FILE.jsonl\n")
        if not secrets.compare_digest(form.get("token", ""), self.opts.ctx.token or ""):
            return web.Response(status=403, text="the form's token does not match: reload the trial page\n")

        def record(con: Any) -> tuple[int, str]:
            run = queries.resolve(con, "run", seg["run"]) or ""
            trial = queries.resolve(con, "trial", seg["trial"], run) or ""
            rec = review.record_from_form(form, run, trial, setup.rubric)
            problem = review.validate(con, rec, setup.rubric)
            if problem:
                return trialpages.trial_page(con, self.opts, run, trial, form=form,
                                             message=f"not recorded: {problem}")  # the form again, with why
            with self.lock:
                line = review.append(setup.file, rec)  # type: ignore[arg-type]
            return 303, site.relative(site.review_action(run, trial), site.trial_page(run, trial)) + \
                f"?recorded={line}#reviews"

        status, body = self._call(record)
        if status == 303:
            raise web.HTTPSeeOther(location=quote(body, safe="/?=#.~-_"))
        return web.Response(status=status, text=body, content_type="text/html", headers=HEADERS)


def app(viewer: Viewer) -> web.Application:
    application = web.Application(client_max_size=256 * 1024)
    application.router.add_route("*", "/{path:.*}", viewer.handle)
    return application


async def _serve(viewer: Viewer, port: int, started: Callable[[str], None]) -> None:
    runner = web.AppRunner(app(viewer), access_log=None)
    await runner.setup()
    tcp = web.TCPSite(runner, viewer.host, port)
    try:
        await tcp.start()
    except OSError as exc:
        await runner.cleanup()
        raise ViewerError(f"cannot serve on {viewer.host}:{port} ({exc.strerror}); choose another --port") from None
    viewer.port = int(runner.addresses[0][1])
    host = f"[{viewer.host}]" if ":" in viewer.host else viewer.host
    started(f"http://{host}:{viewer.port}/")
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def serve(opts: pages.Options, host: str, port: int, allow_remote: bool,
          started: Callable[[str], None]) -> None:
    """Serve until interrupted; ``started(url)`` is called once the port is bound."""
    viewer = Viewer(opts, host, allow_remote)
    asyncio.run(_serve(viewer, port, started))


def new_token() -> str:
    return secrets.token_urlsafe(24)
