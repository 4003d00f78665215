"""Two corpora for the secrets guard (memory_mcp/checks/safety.py), shared by its tests and by
`python -m bench.secret_scanners`.

- Real-shaped secrets: for every kind the README lists, fakes with the provider's
  structure (prefix, length, alphabet, fixed markers) and random characters from a seeded
  generator, so the corpus is the same on every run and holds no real credential. Each is
  placed in realistic text: config lines, env exports, JSON, YAML, code, a curl command,
  prose that ends a sentence with it.
- Harmless text that merely mentions secrets: placeholders, environment look-ups,
  comparisons, docs examples, form fields, prose; plus real code from the installed
  packages (site-packages), the lines around each mention of a token, password, secret or
  key, read at run time.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
URLSAFE = ALNUM + "-_"
BASE32 = string.ascii_uppercase + "234567"


def _pick(rng: random.Random, alphabet: str, size: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))


def _pem_body(rng: random.Random, lines: int) -> str:
    raw = rng.randbytes(48 * lines)
    encoded = base64.b64encode(raw).decode()
    return "\n".join(encoded[i : i + 64] for i in range(0, len(encoded), 64))


def _pem(rng: random.Random, label: str) -> str:
    return f"-----BEGIN {label}-----\n{_pem_body(rng, 8)}\n-----END {label}-----"


def _jwt(rng: random.Random) -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    header = part({"alg": "HS256", "typ": "JWT"})
    payload = part({"sub": str(rng.randrange(10**9)), "name": "Ada", "iat": 1700000000})
    signature = base64.urlsafe_b64encode(rng.randbytes(32)).decode().rstrip("=")
    return f"{header}.{payload}.{signature}"


# kind -> (how to make one, the variable name it usually goes by). The kinds are the
# README's list (rules section), Stripe webhook secrets included.
SecretMaker = Callable[[random.Random], str]
KINDS: dict[str, tuple[SecretMaker, str]] = {
    "rsa private key": (
        lambda r: _pem(r, "RSA PRIVATE KEY"),
        "private_key",
    ),
    "openssh private key (cut short)": (
        lambda r: (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA" + _pick(r, ALNUM, 40)
        ),
        "ssh_key",
    ),
    "aws access key id": (lambda r: "AKIA" + _pick(r, BASE32, 16), "aws_access_key_id"),
    "aws temporary key id": (lambda r: "ASIA" + _pick(r, BASE32, 16), "aws_access_key_id"),
    "aws secret access key": (
        lambda r: _pick(r, ALNUM, 30) + "/" + _pick(r, ALNUM, 9),
        "aws_secret_access_key",
    ),
    "github classic token": (lambda r: "ghp_" + _pick(r, ALNUM, 36), "GITHUB_TOKEN"),
    "github oauth token": (lambda r: "gho_" + _pick(r, ALNUM, 36), "gh_oauth"),
    "github app token": (lambda r: "ghs_" + _pick(r, ALNUM, 36), "GH_APP_TOKEN"),
    "github fine-grained token": (
        lambda r: "github_pat_" + _pick(r, ALNUM, 22) + "_" + _pick(r, ALNUM, 59),
        "GITHUB_PAT",
    ),
    "gitlab token": (lambda r: "glpat-" + _pick(r, URLSAFE, 20), "GITLAB_TOKEN"),
    "slack bot token": (
        lambda r: (
            f"xoxb-{_pick(r, string.digits, 11)}-{_pick(r, string.digits, 13)}-"
            + _pick(r, ALNUM, 24)
        ),
        "SLACK_BOT_TOKEN",
    ),
    "slack user token": (
        lambda r: (
            f"xoxp-{_pick(r, string.digits, 11)}-{_pick(r, string.digits, 11)}-"
            f"{_pick(r, string.digits, 13)}-{_pick(r, LOWER_ALNUM, 32)}"
        ),
        "slack_token",
    ),
    "slack webhook url": (
        lambda r: (
            f"https://hooks.slack.com/services/T{_pick(r, BASE32, 8)}/"
            f"B{_pick(r, BASE32, 10)}/{_pick(r, ALNUM, 24)}"
        ),
        "SLACK_WEBHOOK_URL",
    ),
    "stripe live secret key": (lambda r: "sk_live_" + _pick(r, ALNUM, 34), "STRIPE_KEY"),
    "stripe test secret key": (lambda r: "sk_test_" + _pick(r, ALNUM, 34), "stripe.api_key"),
    "stripe restricted key": (lambda r: "rk_live_" + _pick(r, ALNUM, 34), "STRIPE_RK"),
    "stripe webhook secret": (lambda r: "whsec_" + _pick(r, ALNUM, 32), "STRIPE_WEBHOOK_SECRET"),
    "openai project key": (
        lambda r: "sk-proj-" + _pick(r, URLSAFE, 74) + "T3BlbkFJ" + _pick(r, URLSAFE, 74),
        "OPENAI_API_KEY",
    ),
    "openai legacy key": (
        lambda r: "sk-" + _pick(r, ALNUM, 20) + "T3BlbkFJ" + _pick(r, ALNUM, 20),
        "openai.api_key",
    ),
    "anthropic key": (
        lambda r: "sk-ant-api03-" + _pick(r, URLSAFE, 93) + "AA",
        "ANTHROPIC_API_KEY",
    ),
    "google api key": (lambda r: "AIza" + _pick(r, URLSAFE, 35), "GOOGLE_API_KEY"),
    "hugging face token": (lambda r: "hf_" + _pick(r, string.ascii_letters, 34), "HF_TOKEN"),
    "npm token": (lambda r: "npm_" + _pick(r, ALNUM, 36), "NPM_TOKEN"),
    "pypi token": (
        lambda r: "pypi-AgEIcHlwaS5vcmc" + _pick(r, URLSAFE, 70),
        "TWINE_PASSWORD",
    ),
    "sendgrid key": (
        lambda r: "SG." + _pick(r, URLSAFE, 22) + "." + _pick(r, URLSAFE, 43),
        "SENDGRID_API_KEY",
    ),
    "azure storage key": (
        lambda r: (
            "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey="
            + base64.b64encode(r.randbytes(64)).decode()
            + ";EndpointSuffix=core.windows.net"
        ),
        "AZURE_STORAGE_CONNECTION_STRING",
    ),
    "jwt": (_jwt, "session_token"),
    "password in a url": (
        lambda r: (
            f"postgresql://app:{_pick(r, ALNUM, 10)}{r.choice('!-_~')}{r.randrange(99)}"
            "@db.internal:5432/app"
        ),
        "DATABASE_URL",
    ),
    "bearer token": (lambda r: "Bearer " + _pick(r, URLSAFE, 40), "Authorization"),
    "password assignment": (
        lambda r: _pick(r, ALNUM, 14) + r.choice("-_.") + str(r.randrange(10, 99)),
        "db_password",
    ),
    "api key assignment": (lambda r: _pick(r, LOWER_ALNUM, 32), "api_key"),
    "client secret assignment": (lambda r: _pick(r, ALNUM, 40), "client_secret"),
}

# How a secret sits in a memory's text; {name} is the kind's variable name.
CONTEXTS: dict[str, str] = {
    "env export": "export {name}={secret}",
    "dotenv line": "# staging\n{name}={secret}\nDEBUG=false",
    "json": '{{"service": "billing", "{name}": "{secret}", "retries": 3}}',
    "yaml": "deploy:\n  region: eu-west-1\n  {name}: {secret}\n  replicas: 2",
    "python": 'client = Client(\n    {name}="{secret}",\n    timeout=30,\n)',
    "shell curl": "curl -s https://api.example.org/v1/items -H 'X-Request: 1' # {name} {secret}",
    "prose": "Found it: the {name} is {secret}. Rotate it after the demo.",
    "parenthesis": "The deploy job failed (it used {secret}), so I switched accounts.",
}


@dataclass(frozen=True)
class Sample:
    kind: str
    text: str  # as it is written (a whole connection string, a URL)
    secret: str  # the characters in it that must not be stored
    name: str

    @property
    def generic(self) -> bool:
        """A secret without a shape of its own, known only by the name it is assigned to
        (`api_key = ...`): found in assignments, not in prose that merely names it."""
        return self.kind in GENERIC_KINDS

    def contexts(self) -> list[str]:
        return ASSIGNMENT_CONTEXTS if self.generic else list(CONTEXTS)


ASSIGNMENT_CONTEXTS = ["env export", "dotenv line", "json", "yaml", "python"]
GENERIC_KINDS = {
    "aws secret access key",
    "password assignment",
    "api key assignment",
    "client secret assignment",
}
# The part of a written secret that is the secret: the password of a URL, the key of a
# connection string, the token after "Bearer".
_SECRET_PART = {
    "password in a url": re.compile(r"://[^:]+:([^@]+)@"),
    "azure storage key": re.compile(r"AccountKey=([^;]+)"),
    "bearer token": re.compile(r"Bearer (\S+)"),
}


def secret_samples(per_kind: int = 2, seed: int = 21) -> list[Sample]:
    rng = random.Random(seed)
    samples: list[Sample] = []
    for kind, (make, name) in KINDS.items():
        for _ in range(per_kind):
            text = make(rng)
            part = _SECRET_PART.get(kind)
            match = part.search(text) if part else None
            samples.append(Sample(kind, text, match.group(1) if match else text, name))
    return samples


def in_context(sample: Sample, context: str) -> str:
    text = sample.text
    if sample.kind == "bearer token" and context in ("env export", "dotenv line"):
        text = f'"Authorization: {text}"'
    return CONTEXTS[context].format(name=sample.name, secret=text)


# Text that mentions secrets without holding one. Each line is one memory a coding agent
# might keep; several are the reproductions.
HARMLESS: list[str] = [
    'if username == "valid_username" and password == "valid_password":',
    "new WebClient('xoxb-your-slack-token')",
    "const slack = new WebClient(process.env.SLACK_BOT_TOKEN);",
    "SLACK_BOT_TOKEN=xoxb-your-bot-token",
    "OPENAI_API_KEY=sk-your-key-here",
    "stripe.api_key = 'sk_test_your_key'",
    "STRIPE_WEBHOOK_SECRET=whsec_...",
    "export GITHUB_TOKEN=<TOKEN>",
    "export API_KEY=${API_KEY}",
    "api_key: ${{ secrets.OPENAI_API_KEY }}",
    'password = os.environ["DB_PASSWORD"]',
    "token = os.environ.get('GITHUB_TOKEN', '')",
    "secret = settings.SECRET_KEY",
    'api_key = getpass.getpass("API key: ")',
    "password: changeme",
    "password=xxx",
    "DB_PASSWORD=********",
    "AWS_SECRET_ACCESS_KEY=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "aws_access_key_id = AKIAXXXXXXXXXXXXXXXX",
    "The AWS docs use AKIAIOSFODNN7EXAMPLE as the example access key id.",
    "postgresql://user:password@localhost:5432/mydb",
    "engine = create_engine('postgresql://scott:tiger@localhost/test')",
    "redis://:${REDIS_PASSWORD}@cache:6379/0",
    "mysql://root:<password>@localhost/shop",
    "Authorization: Bearer <token>",
    'headers = {"Authorization": f"Bearer {token}"}',
    "headers['Authorization'] = 'Bearer ' + access_token",
    '<input type="password" name="password" placeholder="Password" required>',
    '<label for="api-key">API key</label><input id="api-key" type="text">',
    "def login(user: str, password: str) -> Token:\n    return auth.check(user, password)",
    "if not token or token != expected_token:\n    raise PermissionError('bad token')",
    "assert response.json()['access_token'] == 'fake-access-token'",
    "secret_key = 'dev-only-not-secret'",
    "Rotate the API token monthly; never commit secrets; keep passwords in the vault.",
    "The token lives in 1Password under 'CI deploy token'.",
    "Password policy: at least 12 characters, one digit; the reset token expires in 1 h.",
    "JWTs look like eyJhbGciOi...: header, payload and signature, base64url.",
    "Use `gh auth token` to print the GitHub token for scripts.",
    "GitLab personal access tokens start with glpat-; GitHub's with ghp_.",
    "client_secret: <your-client-secret>",
    "token: {{ .Values.token }}",
    "password: '%(password)s'",
    "api_key=None",
    "TOKEN_EXPIRY_SECONDS = 3600",
    "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
    "csrf_token = request.cookies.get('csrftoken')",
    "key_length = 32  # bytes",
    "access_token_url = 'https://github.com/login/oauth/access_token'",
    "commit 1961ba8c3f0e4d2a9b7c6d5e4f3a2b1c0d9e8f7a fixed the token refresh",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "request 12345678-1234-5678-1234-567812345678 failed with 401 (token expired)",
    "-----BEGIN RSA PRIVATE KEY----- starts a PEM private key; never paste one here.",
    "ssh-keygen -t ed25519 -f ~/.ssh/id_ed25519  # then add the public key",
    "kubectl create secret generic db --from-literal=password=$DB_PASSWORD",
    "docker run -e POSTGRES_PASSWORD=postgres postgres:16",
    "    passwd: str = Field(repr=False)",
    "user.set_password(form.cleaned_data['password1'])",
    "TOKEN = 'test-token'",
    "secrets.token_urlsafe(32)  # generate a session secret at start",
    "npm config set //registry.npmjs.org/:_authToken ${NPM_TOKEN}",
    "HF_TOKEN=hf_xxx huggingface-cli login",
    "pypi token: pypi-AgEI... (stored in the keyring, not here)",
    "The webhook URL is https://hooks.slack.com/services/T000/B000/XXXX",
    "Bearer tokens go in the Authorization header, e.g. Bearer YOUR_ACCESS_TOKEN.",
    "key = cache_key(user_id, 'profile')",
    "api_version = '2024-06-01'",
    "auth_header_name = 'X-Api-Key'",
]

# Words whose mention in real code is what the site-packages slice is made of.
MENTION = re.compile(r"(?i)token|passw|secret|api_?key|credential|bearer|auth")
# The packages read (all installed with the project): web, database, HTTP, auth and
# settings code, where secrets are mentioned most.
PACKAGES = (
    "sqlalchemy",
    "starlette",
    "httpx",
    "httpcore",
    "mcp",
    "pydantic",
    "jinja2",
    "anyio",
    "huggingface_hub",
    "transformers",
    "asyncpg",
    "aiosqlite",
    "rich",
    "jwt",
    "uvicorn",
    "sse_starlette",
    "requests",
    "urllib3",
    "pip",
    "setuptools",
    "playwright",
)


def site_packages() -> Path:
    for entry in sys.path:
        if entry.endswith("site-packages") and Path(entry, "sqlalchemy").is_dir():
            return Path(entry)
    raise FileNotFoundError("no site-packages with the project's dependencies on sys.path")


def code_mentions(max_per_package: int = 600, context_lines: int = 3) -> Iterator[tuple[str, str]]:
    """(where, text): each line that mentions a secret in the packages' .py files, with
    `context_lines` lines either side, as one memory would hold a snippet. Files in sorted
    order; at most `max_per_package` chunks from each package."""
    root = site_packages()
    for package in PACKAGES:
        folder = root / package
        if not folder.is_dir():
            continue
        count = 0
        for path in sorted(folder.rglob("*.py")):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            last_end = -1
            for number, line in enumerate(lines):
                if number <= last_end or not MENTION.search(line):
                    continue
                start = max(0, number - context_lines)
                last_end = min(len(lines), number + context_lines + 1)
                yield f"{path.relative_to(root)}:{number + 1}", "\n".join(lines[start:last_end])
                count += 1
                if count >= max_per_package:
                    break
            if count >= max_per_package:
                break
