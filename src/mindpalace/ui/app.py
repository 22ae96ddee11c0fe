"""The inspector as an ASGI app: sessions, CSRF, security headers, routing.

Every request but the login and the static files needs a session (a cookie
``sessions`` gave out); its palace is the pool's view for the session's
caller, exactly as a REST request with that caller's token gets, so the UI
sees what the token sees and nothing more. Pages are built in a worker
thread from the Python API (``pages``) and wrapped in the common layout.

Defences, each on every response or request it applies to:

- every stored text is escaped (``html``), and the Content-Security-Policy
  allows no inline script or style: only this site's own files;
- framing is refused (``frame-ancestors 'none'``, ``X-Frame-Options``),
  types are not sniffed, no referrer leaves the site (with no referrer at all,
  a browser sends ``Origin: null`` on a form post), pages are not cached;
- a write (any POST) must come from this site (``Origin``, else
  ``Referer``) and, once logged in, carry the session's CSRF token; the
  session cookie is HttpOnly and SameSite=Strict;
- on a loopback address, only loopback host names are answered (a DNS
  rebinding page cannot reach the inspector under its own name:
  ``web.hosts``, the check of every front end).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mindpalace.errors import (
    MindPalaceError,
    NotFoundError,
    PermissionDenied,
    UnknownSkill,
    ValidationError,
)
from mindpalace.ui import pages
from mindpalace.ui.layout import Ctx, Page, Redirect, error_page, render
from mindpalace.ui.pages import PageFunction
from mindpalace.ui.sessions import COOKIE, OneTimeTokens, Session, Sessions, same_token
from mindpalace.ui.throttle import LoginThrottle
from mindpalace.web.hosts import LoopbackHosts, foreign_origin
from mindpalace.web.identity import AuthError, Caller, PalacePool, TokenTable, is_loopback

__all__ = ["CSP", "SecurityHeaders", "build_ui"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
    " connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
_STATIC = {
    "app.css": "text/css; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


class SecurityHeaders:
    """Adds the security headers to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in _HEADERS if k not in present]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)


def _cookie_name(request: Request) -> str:
    # Cookies are not kept per port: two inspectors on one host must not
    # overwrite each other's session.
    return f"{COOKIE}_{request.url.port or (443 if request.url.scheme == 'https' else 80)}"


def _same_origin(request: Request) -> bool:
    """Whether a write comes from a page of this site (``Origin``, or
    ``Referer`` where a browser sends no Origin)."""
    if "origin" in request.headers:
        return foreign_origin(request.scope) is None
    own = f"{request.url.scheme}://{request.headers.get('host', '')}".lower()
    referer = request.headers.get("referer")
    if referer:
        parts = urlsplit(referer)
        return f"{parts.scheme}://{parts.netloc}".lower() == own
    return False


def _html(markup: str, status: int = 200, *, timing: float | None = None) -> Response:
    headers = {"cache-control": "no-store"}
    if timing is not None:
        headers["server-timing"] = f"app;dur={timing * 1000:.1f}"
    return Response(markup, status_code=status, media_type="text/html", headers=headers)


def _describe(exc: MindPalaceError) -> tuple[int, str]:
    if isinstance(exc, NotFoundError | UnknownSkill):
        return 404, "Not found: nothing of that name is visible to you."
    if isinstance(exc, PermissionDenied):
        return 403, f"You may see this memory, but not {exc.action} it: {exc.reason}."
    if isinstance(exc, ValidationError):
        return 400, str(exc)
    return 500, f"The palace could not answer: {type(exc).__name__}"


class _Inspector:
    """The endpoints, over one pool, token table and session table."""

    def __init__(
        self,
        pool: PalacePool,
        tokens: TokenTable,
        sessions: Sessions,
        one_time: OneTimeTokens | None,
        *,
        login_form: bool,
        throttle: LoginThrottle,
    ) -> None:
        self.throttle = throttle
        self.pool = pool
        self.tokens = tokens
        self.sessions = sessions
        self.one_time = one_time
        self.login_form = login_form
        folder = resources.files("mindpalace.ui").joinpath("static")
        self.static = {name: folder.joinpath(name).read_bytes() for name in _STATIC}

    # -- sessions ----------------------------------------------------------------------

    async def start(self, caller: Caller, request: Request, to: str = "/memories") -> Response:
        """Open a session for ``caller``, set its cookie, and go to ``to``
        (a redirect, so no token stays in the address bar or the history)."""
        cookie, _ = await anyio.to_thread.run_sync(self.sessions.open, caller)
        response = RedirectResponse(to, status_code=303)
        response.set_cookie(
            _cookie_name(request),
            cookie,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        response.headers["cache-control"] = "no-store"
        return response

    async def session_of(self, request: Request) -> Session | None:
        """The request's live session (read in a worker thread: the palace
        keeps the sessions logged out)."""
        cookie = request.cookies.get(_cookie_name(request))
        if not cookie:
            return None
        return await anyio.to_thread.run_sync(self.sessions.get, cookie)

    async def login(self, request: Request) -> Response:
        token = request.query_params.get("token")
        address = request.client.host if request.client is not None else "unknown"
        if request.method == "GET" and token is not None:
            wait = self.throttle.take(address)
            if wait is not None:
                return _too_many(wait)
            caller = self.one_time.redeem(token) if self.one_time is not None else None
            if caller is None:
                return _refuse(403, "This link is used up or not valid: start the inspector again.")
            self.throttle.give_back(address)
            return await self.start(caller, request)
        if self.tokens.anonymous is not None:
            return await self.start(Caller(self.tokens.anonymous), request)
        message = None
        if request.method == "POST":
            if not _same_origin(request):
                return _refuse(403, "Cross-site request refused.")
            form = await request.form()
            # Refused before the token is looked at: the answer says nothing of it.
            wait = self.throttle.take(address)
            if wait is not None:
                return _too_many(wait)
            try:
                caller = self.tokens.identify(
                    f"Bearer {_field(form, 'token')}", _field(form, "agent") or None
                )
            except AuthError as exc:
                message = f"Not logged in: {exc}."
            else:
                self.throttle.give_back(address)
                return await self.start(caller, request)
        page = pages.login_page(message, form=self.login_form)
        return _html(render(page, None), 401 if message else 200)

    async def logout(self, request: Request) -> Response:
        session = await self.session_of(request)
        if request.method != "POST" or session is None or not _same_origin(request):
            return RedirectResponse("/login", status_code=303)
        form = await request.form()
        if not same_token(_field(form, "csrf"), session.csrf):
            return _refuse(403, "Missing or stale form token.")
        await anyio.to_thread.run_sync(
            self.sessions.close, request.cookies.get(_cookie_name(request))
        )
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(_cookie_name(request), path="/")
        return response

    # -- pages ---------------------------------------------------------------------------

    async def asset(self, request: Request) -> Response:
        name = request.path_params.get("name", "favicon.svg")
        if name not in self.static:
            return Response("no such file\n", status_code=404, media_type="text/plain")
        return Response(
            self.static[name], media_type=_STATIC[name], headers={"cache-control": "no-cache"}
        )

    def route(self, path: str, function: PageFunction, *, write: bool = False) -> Route:
        """The route of a page (GET) or a write (POST: same origin, CSRF token)."""

        async def endpoint(request: Request) -> Response:
            session = await self.session_of(request)
            if session is None:
                if write:
                    return _refuse(403, "Log in first.")
                return RedirectResponse("/login", status_code=303)
            form: FormData | None = None
            if write:
                if not _same_origin(request):
                    return _refuse(403, "Cross-site request refused.")
                form = await request.form()
                if not same_token(_field(form, "csrf"), session.csrf):
                    return _refuse(403, "Missing or stale form token: reload the page.")
            return await self.run(function, request, session, form)

        endpoint.__name__ = function.__name__
        return Route(path, endpoint, methods=["POST"] if write else ["GET", "HEAD"])

    async def run(
        self, function: PageFunction, request: Request, session: Session, form: FormData | None
    ) -> Response:
        """Build a page in a worker thread, through the caller's palace."""
        caller = session.caller
        began = time.perf_counter()
        fields = (
            None if form is None else {k: v for k, v in form.multi_items() if isinstance(v, str)}
        )

        def build() -> tuple[Page | Redirect, str]:
            ctx = Ctx(
                palace=self.pool.for_agent(caller.agent, admin=caller.admin),
                caller=caller,
                csrf=session.csrf,
                query=request.query_params,
                path=dict(request.path_params),
                form=fields,
            )
            try:
                result = function(ctx)
            except MindPalaceError as exc:
                result = error_page(*_describe(exc))
            if isinstance(result, Redirect):
                return result, ""
            return result, render(result, ctx)

        result, markup = await anyio.to_thread.run_sync(build)
        if isinstance(result, Redirect):
            return RedirectResponse(result.to, status_code=303)
        return _html(markup, result.status, timing=time.perf_counter() - began)


def _refuse(status: int, message: str) -> Response:
    return _html(render(error_page(status, message), None), status)


def _too_many(wait: float) -> Response:
    after = LoginThrottle.retry_after(wait)
    response = _refuse(
        429, f"Too many login attempts: try again in {after} s (failed attempts are limited)."
    )
    response.headers["retry-after"] = after
    return response


def build_ui(
    pool: PalacePool,
    tokens: TokenTable,
    *,
    host: str = "127.0.0.1",
    sessions: Sessions | None = None,
    one_time: OneTimeTokens | None = None,
    login_form: bool = True,
    throttle: LoginThrottle | None = None,
) -> ASGIApp:
    """The inspector's ASGI app.

    Args:
        pool: the palaces pages read through, one per caller.
        tokens: the bearer tokens the login form accepts (with ``--auth
            none``, every browser acts as the anonymous agent).
        host: the address served (a loopback one turns on the host check).
        sessions: how browser sessions are signed and ended (by default over
            the pool's store, so every process serving the palace shares them).
        one_time: tokens a ``/login?token=`` link redeems (``mindpalace ui``).
        login_form: offer the bearer-token form (off for ``mindpalace ui``,
            whose only way in is its link).
        throttle: how often a login may be tried (``throttle``; its defaults
            when None).
    """
    inspector = _Inspector(
        pool,
        tokens,
        sessions or Sessions(pool.base.engine.store),
        one_time,
        login_form=login_form,
        throttle=throttle or LoginThrottle(),
    )

    async def home(request: Request) -> Response:
        return RedirectResponse("/memories", status_code=303)

    async def not_found(request: Request, exc: Exception) -> Response:
        return _refuse(404, "No such page.")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return _refuse(405, f"{request.method} is not allowed here.")

    routes = [
        Route("/", home),
        Route("/login", inspector.login, methods=["GET", "POST"]),
        Route("/logout", inspector.logout, methods=["GET", "POST"]),
        Route("/static/{name}", inspector.asset),
        Route("/favicon.ico", inspector.asset),
        *(inspector.route(path, fn) for path, fn in pages.READS),
        *(inspector.route(path, fn, write=True) for path, fn in pages.WRITES),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        404: not_found,
        405: not_allowed,
    }
    app = Starlette(routes=routes, exception_handlers=handlers)
    # The host check inside the headers: a 421 carries them too.
    return SecurityHeaders(LoopbackHosts(app, loopback=is_loopback(host)))


def _field(form: FormData, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""
