"""`--oauth`: the team server is also the OAuth 2.1 authorization server for itself, so
Claude's custom connectors (which speak only OAuth) can use it.

The protocol is the MCP SDK's own (`mcp.server.auth`): its routes for the authorization
server's metadata (RFC 8414), dynamic client registration (RFC 7591), /authorize (PKCE
S256 only, the redirect URI checked against the registration), /token (code and refresh
grants, the PKCE verifier and redirect URI checked) and /revoke (RFC 7009), the protected
resource metadata (RFC 9728), and its bearer middleware, which refuses a token issued for
another resource (RFC 8707). This module is the SDK's `OAuthAuthorizationServerProvider`
over the store's grants (memory_mcp/auth/oauth.py: hashing, single use, lifetimes,
who a sign-in is); the sign-in page a person sees is web/authorize_page.py.

The issuer is --public-url (the https address a reverse proxy gives the server: Claude's
connectors reach it from Anthropic's cloud), or http://HOST:PORT on loopback for local
use; the resource is the issuer plus the transport's path (/mcp or /sse).

Two of the SDK's routes are wrapped. /register is anonymous, so it accepts at most
--oauth-registrations-per-minute registrations a minute (then 429 with Retry-After); the
store never drops a client in the middle of signing in (auth/oauth.py). /authorize
answers a bad request with a page that says what was wrong, never with a redirect: with
open registration anyone can register https://evil.example/cb, and a redirect there
would make this server an open redirector (RFC 9700 §4.11.2); only the sign-in page,
once a person has answered, sends the browser to the client."""

from __future__ import annotations

import html
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.server.auth.routes import (
    AUTHORIZATION_PATH,
    REGISTRATION_PATH,
    create_auth_routes,
    create_protected_resource_routes,
    validate_issuer_url,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, RequestBodyLimitMiddleware
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl, ValidationError
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route, request_response
from starlette.types import ASGIApp, Receive, Scope, Send

from memory_mcp.app.binding import is_loopback
from memory_mcp.auth.oauth import (
    SIGN_IN_PATH,
    AuthorizationRequest,
    IssuedTokens,
    OAuthGrants,
    redirect_uri_problem,
)
from memory_mcp.errors import InvalidInputError
from memory_mcp.http.rates import SlidingWindow
from memory_mcp.settings import Settings

log = logging.getLogger(__name__)

MAX_REDIRECT_URIS = 10
MAX_REGISTRATION_CHARS = 16_000  # a registration is kept in the store: small and bounded
MAX_CLIENT_ID_CHARS = 64  # ours are UUIDs
# BASE64URL(SHA-256(verifier)) without padding: always 43 characters. An empty or other
# challenge would make a code no verifier can redeem: refused up front (OAuth 2.1 §4.1.1).
S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")
MAX_SHOWN_CHARS = 300  # of an error's description on the refusal page (it may quote input)
# The refusal page: no script, nothing framed, no form, the web view's stylesheet.
REFUSAL_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
REFUSAL_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sign-in refused · memory-mcp</title>
<link rel="stylesheet" href="{stylesheet}">
</head>
<body>
<main>
<h1>This sign-in request was refused</h1>
<p class="error" role="alert"><code>{error}</code>: {description}</p>
<p>Nothing was sent back to the application that opened this page. Close this tab and
connect again from the application; if this keeps happening, its request is wrong as
said above.</p>
</main>
</body>
</html>
"""


def _issued(tokens: IssuedTokens) -> OAuthToken:
    return OAuthToken(
        access_token=tokens.access_token,
        token_type="Bearer",
        expires_in=tokens.expires_in,
        scope=" ".join(tokens.scopes) or None,
        refresh_token=tokens.refresh_token,
    )


def same_resource(given: str, ours: str) -> bool:
    """RFC 8707 resource indicators compared as URLs (case of scheme and host, a default
    port, a trailing slash aside), as the SDK's bearer middleware compares them."""
    try:
        return str(AnyHttpUrl(given)).rstrip("/") == str(AnyHttpUrl(ours)).rstrip("/")
    except ValidationError:
        return False


class StoreOAuthProvider(
    OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]
):
    """The SDK's provider interface over `OAuthGrants`. Codes and refresh tokens are
    found only for the client they were issued to and for this server's resource."""

    def __init__(self, grants: OAuthGrants, resource: str, sign_in_url: str) -> None:
        self.grants = grants
        self.resource = resource
        self.sign_in_url = sign_in_url

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if len(client_id) > MAX_CLIENT_ID_CHARS:
            return None
        registration = await self.grants.client(client_id)
        if registration is None:
            return None
        return OAuthClientInformationFull.model_validate_json(registration)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        uris = [str(uri) for uri in client_info.redirect_uris or []]
        if not uris or len(uris) > MAX_REDIRECT_URIS:
            raise RegistrationError(
                "invalid_redirect_uri", f"give 1 to {MAX_REDIRECT_URIS} redirect URIs"
            )
        for uri in uris:
            problem = redirect_uri_problem(uri)
            if problem is not None:
                raise RegistrationError("invalid_redirect_uri", problem)
        registration = client_info.model_dump_json(exclude_none=True)
        if len(registration) > MAX_REGISTRATION_CHARS:
            raise RegistrationError(
                "invalid_client_metadata", f"longer than {MAX_REGISTRATION_CHARS} characters"
            )
        await self.grants.register_client(
            client_info.client_id or "", registration, client_info.client_name
        )

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        """Keep the checked request and send the browser to the sign-in page."""
        if params.resource is not None and not same_resource(params.resource, self.resource):
            raise AuthorizeError("invalid_target", f"this server is the resource {self.resource}")
        if not S256_CHALLENGE.fullmatch(params.code_challenge):  # the SDK takes any string
            raise AuthorizeError(
                "invalid_request", "code_challenge must be an S256 challenge (RFC 7636 §4.2)"
            )
        request_id = await self.grants.open_request(
            AuthorizationRequest(
                client_id=client.client_id or "",
                redirect_uri=str(params.redirect_uri),
                redirect_uri_explicit=params.redirect_uri_provided_explicitly,
                code_challenge=params.code_challenge,
                state=params.state,
                scopes=tuple(params.scopes or ()),
                resource=self.resource,
            )
        )
        return f"{self.sign_in_url}?{urlencode({'request': request_id})}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        grant = await self.grants.code(authorization_code)
        if grant is None or grant.client_id != client.client_id:
            return None
        if not same_resource(grant.resource, self.resource):
            return None
        return AuthorizationCode(
            code=authorization_code,
            scopes=list(grant.scopes),
            expires_at=grant.expires_at,
            client_id=grant.client_id,
            code_challenge=grant.code_challenge,
            redirect_uri=AnyUrl(grant.redirect_uri),
            redirect_uri_provided_explicitly=grant.redirect_uri_explicit,
            resource=grant.resource,
            subject=grant.agent_id,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        issued = await self.grants.exchange_code(authorization_code.code)
        if issued is None:
            raise TokenError("invalid_grant", "authorization code already used or revoked")
        return _issued(issued)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        grant = await self.grants.refresh_token(refresh_token)
        if grant is None or grant.client_id != client.client_id:
            return None
        if not same_resource(grant.resource, self.resource):
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=grant.client_id,
            scopes=list(grant.scopes),
            expires_at=int(grant.expires_at),
            resource=grant.resource,
            subject=grant.subject,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        issued = await self.grants.rotate(refresh_token.token)
        if issued is None:
            raise TokenError("invalid_grant", "refresh token already used or revoked")
        return _issued(issued)

    async def load_access_token(self, token: str) -> AccessToken | None:
        """For /revoke: the token with the OAuth client it was issued to (the MCP routes
        verify tokens with mcp/identity.py's verifier, which names the agent)."""
        grant = await self.grants.access_token(token)
        if grant is None:
            return None
        return AccessToken(
            token=token,
            client_id=grant.client_id,
            scopes=list(grant.scopes),
            expires_at=int(grant.expires_at),
            resource=grant.resource,
            subject=grant.subject,
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        await self.grants.revoke(token.token)


@dataclass(frozen=True)
class OAuthRoutes:
    auth: AuthSettings  # issuer, resource, the resource check on
    resource: str
    server_routes: list[Route]  # metadata, register, authorize, token, revoke
    resource_routes: list[Route]  # the protected resource metadata


class RegistrationLimit:
    """ASGI middleware for /register: a registration beyond the window's limit gets 429
    with Retry-After, before the SDK reads it or the store is touched."""

    def __init__(self, app: ASGIApp, window: SlidingWindow) -> None:
        self.app = app
        self.window = window

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        wait = self.window.wait() if scope.get("method") == "POST" else 0.0
        if not wait:
            await self.app(scope, receive, send)
            return
        seconds = max(1, math.ceil(wait))
        log.warning("refused a client registration: over %d a minute", self.window.limit)
        body = {
            "error": "temporarily_unavailable",
            "error_description": f"this server accepts {self.window.limit} client "
            f"registrations a minute (--oauth-registrations-per-minute); try again in "
            f"{seconds} s",
        }
        # CORS as the SDK's own answers on this route: browser-based clients read it too
        headers = {"Retry-After": str(seconds), "Access-Control-Allow-Origin": "*"}
        await JSONResponse(body, 429, headers=headers)(scope, receive, send)


def _refusal_of(response: Response, sign_in_url: str) -> tuple[str, str] | None:
    """(error, description) of the SDK's answer to /authorize when it refused: a redirect
    to the client's redirect URI with `error`, or its JSON 400. None: the request goes on
    to the sign-in page."""
    location = response.headers.get("location")
    if location is not None:
        if location.startswith(sign_in_url + "?"):
            return None
        query = parse_qs(urlsplit(location).query)
        return query.get("error", ["invalid_request"])[0], query.get("error_description", [""])[0]
    if response.status_code >= 400 and isinstance(response, JSONResponse):
        body = json.loads(bytes(response.body))
        return str(body.get("error", "invalid_request")), str(body.get("error_description", ""))
    return None


def refusal_page(error: str, description: str) -> HTMLResponse:
    page = REFUSAL_PAGE.format(
        stylesheet=html.escape(SIGN_IN_PATH.rsplit("/", 1)[0] + "/style.css"),
        error=html.escape(error[:64]),
        description=html.escape(description[:MAX_SHOWN_CHARS]),
    )
    return HTMLResponse(page, 400, headers=REFUSAL_HEADERS)


def authorize_endpoint(provider: StoreOAuthProvider) -> ASGIApp:
    """The SDK's /authorize (its checks, then the provider's `authorize`), with every
    refusal shown as a page (400) instead of sent to the client's redirect URI."""
    handle: Callable[[Request], Awaitable[Response]] = AuthorizationHandler(provider).handle

    async def authorize(request: Request) -> Response:
        response = await handle(request)
        refusal = _refusal_of(response, provider.sign_in_url)
        if refusal is None:
            return response
        log.info("/authorize refused: %s: %s", refusal[0][:64], refusal[1][:MAX_SHOWN_CHARS])
        return refusal_page(*refusal)

    return RequestBodyLimitMiddleware(request_response(authorize), DEFAULT_MAX_REQUEST_BODY_SIZE)


def issuer_of(settings: Settings) -> str:
    """--public-url, or http://HOST:PORT when listening on loopback only; anything else
    cannot be an issuer a connector accepts, and serve says so before listening."""
    if settings.public_url is None and not is_loopback(settings.host):
        raise InvalidInputError(
            "public_url",
            f"--oauth on {settings.host} needs --public-url: the https:// address clients "
            "reach this server at (its reverse proxy's)",
        )
    issuer = settings.public_base_url
    try:
        validate_issuer_url(AnyHttpUrl(issuer))
    except (ValueError, ValidationError) as exc:
        raise InvalidInputError(
            "public_url", f"{issuer} cannot be an OAuth issuer: use https:// ({exc})"
        ) from None
    return issuer


def oauth_routes(settings: Settings, grants: OAuthGrants, path: str) -> OAuthRoutes:
    """The SDK's routes and auth settings for this server as its own authorization server."""
    issuer = issuer_of(settings)
    resource = issuer + path
    registration = ClientRegistrationOptions(enabled=True)
    revocation = RevocationOptions(enabled=True)
    # Strings, parsed by AuthSettings, which keeps an empty path empty: the issuer is
    # compared as a string (RFC 8414, RFC 9207's `iss`) and must read as --public-url does.
    auth = AuthSettings.model_validate(
        {
            "issuer_url": issuer,
            "resource_server_url": resource,
            "validate_token_resource": True,
            "client_registration_options": registration,
            "revocation_options": revocation,
        }
    )
    assert auth.resource_server_url is not None
    provider = StoreOAuthProvider(grants, resource, issuer + SIGN_IN_PATH)
    registrations = SlidingWindow(settings.oauth_registrations_per_minute)

    def ours(route: Route) -> Route:
        if route.path == AUTHORIZATION_PATH:
            app = authorize_endpoint(provider)
        elif route.path == REGISTRATION_PATH:
            app = RegistrationLimit(route.app, registrations)
        else:
            return route
        return Route(route.path, app, methods=sorted(route.methods or ()))

    routes = create_auth_routes(
        provider,
        auth.issuer_url,
        client_registration_options=registration,
        revocation_options=revocation,
    )
    return OAuthRoutes(
        auth,
        resource,
        [ours(route) for route in routes],
        create_protected_resource_routes(
            resource_url=auth.resource_server_url,
            authorization_servers=[auth.issuer_url],
            resource_name="memory-mcp",
        ),
    )


__all__ = ["OAuthRoutes", "StoreOAuthProvider", "issuer_of", "oauth_routes", "same_resource"]
