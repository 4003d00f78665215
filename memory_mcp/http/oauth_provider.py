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
use; the resource is the issuer plus the transport's path (/mcp or /sse)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlencode

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
    create_auth_routes,
    create_protected_resource_routes,
    validate_issuer_url,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl, ValidationError
from starlette.routing import Route

from memory_mcp.app.binding import is_loopback
from memory_mcp.auth.oauth import (
    SIGN_IN_PATH,
    AuthorizationRequest,
    IssuedTokens,
    OAuthGrants,
    redirect_uri_problem,
)
from memory_mcp.errors import InvalidInputError
from memory_mcp.settings import Settings

MAX_REDIRECT_URIS = 10
MAX_REGISTRATION_CHARS = 16_000  # a registration is kept in the store: small and bounded
MAX_CLIENT_ID_CHARS = 64  # ours are UUIDs
# BASE64URL(SHA-256(verifier)) without padding: always 43 characters. An empty or other
# challenge would make a code no verifier can redeem: refused up front (OAuth 2.1 §4.1.1).
S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")


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
    return OAuthRoutes(
        auth,
        resource,
        create_auth_routes(
            provider,
            auth.issuer_url,
            client_registration_options=registration,
            revocation_options=revocation,
        ),
        create_protected_resource_routes(
            resource_url=auth.resource_server_url,
            authorization_servers=[auth.issuer_url],
            resource_name="memory-mcp",
        ),
    )


__all__ = ["OAuthRoutes", "StoreOAuthProvider", "issuer_of", "oauth_routes", "same_resource"]
