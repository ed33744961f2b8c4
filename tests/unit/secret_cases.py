"""Credential cases for the masking tests and benchmark: (case, file text, the secret it carries).

Every value is fake; the shapes follow each vendor's published token format. ``NOT_SECRETS`` are
ordinary lines that must come through unchanged. ``SECRET_FILES`` are files skipped by name.
"""

from __future__ import annotations

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"

SECRETS: list[tuple[str, str, str]] = [
    ("AWS access key id", 'aws_id = "AKIAIOSFODNN7EXAMPLE"\n', "AKIAIOSFODNN7EXAMPLE"),
    ("AWS secret, shell export", f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n", AWS_SECRET),
    ("AWS secret, YAML", f"aws:\n  aws_secret_access_key: {AWS_SECRET}\n", AWS_SECRET),
    (
        "AWS secret, ~/.aws/credentials INI",
        f"[default]\naws_access_key_id = AKIAI44QH8DHBEXAMPLE\naws_secret_access_key = {AWS_SECRET}x\n",
        AWS_SECRET + "x",
    ),
    ("AWS secret, quoted", f'AWS_SECRET_ACCESS_KEY = "{AWS_SECRET}y"\n', AWS_SECRET + "y"),
    (
        "AWS session token, INI",
        "aws_session_token = IQoJb3JpZ2luX2VjEJr9wEaCXVzLWVhc3QtMSJHMEUCIQDx7Zk2\n",
        "IQoJb3JpZ2luX2VjEJr9wEaCXVzLWVhc3QtMSJHMEUCIQDx7Zk2",
    ),
    (
        "RSA private key block",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END RSA PRIVATE KEY-----\n",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo",
    ),
    (
        "OpenSSH private key block",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9u\n"
        "-----END OPENSSH PRIVATE KEY-----\n",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9u",
    ),
    (
        "PGP private key block",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0gSecretPgpMaterialQwErTy12\n=abcd\n"
        "-----END PGP PRIVATE KEY BLOCK-----\n",
        "lQOYBF0gSecretPgpMaterialQwErTy12",
    ),
    (
        "private key in JSON (service account)",
        '{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n'
        '-----END PRIVATE KEY-----\\n"}\n',
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    ),
    ("postgres URL password", 'DATABASE_URL = "postgres://app:Pg5ecretPw@db:5432/app"\n', "Pg5ecretPw"),
    ("mysql URL password", "url: mysql://root:My5qlPass@127.0.0.1/shop\n", "My5qlPass"),
    (
        "mongodb+srv URL password",
        'MONGO = "mongodb+srv://admin:M0ngoPassw@cluster0.ab1cd.mongodb.net/db"\n',
        "M0ngoPassw",
    ),
    ("redis URL password (no user)", "REDIS_URL=redis://:R3disPassw0rd@cache:6379/0\n", "R3disPassw0rd"),
    ("amqp URL password", "broker = 'amqp://guest:AmqpPa55w@rabbit:5672//'\n", "AmqpPa55w"),
    ("https URL password", "git clone https://deploy:HttpsPa55@git.example.com/r.git\n", "HttpsPa55"),
    ("GitLab token", "GITLAB_TOKEN=glpat-Xk3vQ9mZr2Lp8sT1wYb4\n", "glpat-Xk3vQ9mZr2Lp8sT1wYb4"),
    (
        "Stripe key, unquoted",
        "STRIPE_KEY=sk_live_4eC39HqLyjWDarjtT1zdp7dc\n",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    ),
    (
        "Stripe restricted key, quoted",
        'stripe_key = "rk_live_51Hx9KqLyjWDarjtT1zdp7dcAb"\n',
        "rk_live_51Hx9KqLyjWDarjtT1zdp7dcAb",
    ),
    (
        "Stripe test key",
        "stripe.api_key = sk_test_26PHem9AhJZvU623DfE1x4sd\n",
        "sk_test_26PHem9AhJZvU623DfE1x4sd",
    ),
    (
        "docker config auth",
        '{"auths": {"registry.example.com": {"auth": "ZGVwbG95OmQwY2tlclBhc3M="}}}\n',
        "ZGVwbG95OmQwY2tlclBhc3M=",
    ),
    (
        "kubeconfig client-key-data",
        "users:\n- name: admin\n  user:\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=\n",
        "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=",
    ),
    (
        "kubeconfig client-certificate-data",
        "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=\n",
        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=",
    ),
    ("kubeconfig token", "    token: 7g3kd9.q8x2m4v6b1n5c0z7\n", "7g3kd9.q8x2m4v6b1n5c0z7"),
    ("short quoted password", 'password = "hunter2"\n', "hunter2"),
    ("JSON password", '{"user": "bob", "password": "s3cr3tPw"}\n', "s3cr3tPw"),
    ("YAML password, unquoted", "db:\n  password: Tr0ub4dor&3\n", "Tr0ub4dor&3"),
    ("Go struct password", 'cfg := Config{User: "x", Password: "G0lang!pw"}\n', "G0lang!pw"),
    ("Django SECRET_KEY", 'DJANGO_SECRET_KEY = "django-insecure-8f2k9d0s7a6g5h4j"\n', "8f2k9d0s7a6g5h4j"),
    (
        "npm token",
        "//registry.npmjs.org/:_authToken=npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\n",
        "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    ),
    (
        "PyPI token",
        "password = pypi-AgEIcHlwaS5vcmcCJGQ4ZjY0YzQ0LTk3NDUtNDFhYS1iNjg0LTMzYjU0ZjZmMGE4MgACKlsz\n",
        "pypi-AgEIcHlwaS5vcmcCJGQ4ZjY0YzQ0LTk3NDUtNDFhYS1iNjg0LTMzYjU0ZjZmMGE4MgACKlsz",
    ),
    (
        "Twilio API key",
        "TWILIO = 'SK0123456789abcdef0123456789abcdef'\n",
        "SK0123456789abcdef0123456789abcdef",
    ),
    (
        "SendGrid key",
        "sg = SendGridAPIClient('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')\n",
        "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",
    ),
    (
        "Hugging Face token",
        "HF = 'hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567'\n",
        "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
    ),
    (
        "Azure storage account key",
        "conn = 'DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
        "EndpointSuffix=core.windows.net'\n",
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
    ),
    (
        "Slack webhook",
        'HOOK = "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"\n',
        "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    ("generic .env secret", "SESSION_SECRET=8f2k9d0s7a6g5h4j3k2l1q\n", "8f2k9d0s7a6g5h4j3k2l1q"),
    (
        "generic .env token",
        "export SERVICE_AUTH_TOKEN=Zm9vYmFyYmF6cXV4MTIzNDU2\n",
        "Zm9vYmFyYmF6cXV4MTIzNDU2",
    ),
    (
        "bearer header",
        'headers = {"Authorization": "Bearer Zx8k2mQ9vL4pR7tW1yB5nC3"}\n',
        "Zx8k2mQ9vL4pR7tW1yB5nC3",
    ),
    (
        "GitHub token",
        "gh = 'ghp_0123456789abcdefghijABCDEFGHIJklmnop'\n",
        "ghp_0123456789abcdefghijABCDEFGHIJklmnop",
    ),
    ("Slack bot token", "SLACK = 'xoxb-1234567890-abcdefghijkl'\n", "xoxb-1234567890-abcdefghijkl"),
    (
        "OpenAI key",
        "key = 'sk-proj-0123456789abcdefghijABCDEFGHIJ0123'\n",
        "sk-proj-0123456789abcdefghijABCDEFGHIJ0123",
    ),
    (
        "Google API key",
        "G = 'AIzaSyA1234567890abcdefghijklmnopqrstuv'\n",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    ),
    (
        "JWT",
        "t = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'\n",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    ("api_key quoted", 'api_key = "0123456789abcdef0123"\n', "0123456789abcdef0123"),
    # issue 22: values the rules above let through
    (
        "Django SECRET_KEY with punctuation",
        "SECRET_KEY = 'django-insecure-k3$!@#9x^f*a&(zq=+w5)n0_r!b@2#c$'\n",
        "k3$!@#9x^f*a&(zq=+w5)n0_r!b@2#c$",
    ),
    ("password starting my_", 'DB_PASSWORD = "my_Sup3rDbPw"\n', "my_Sup3rDbPw"),
    ("password starting the-", "admin_password: 'the-R3al-0ne'\n", "the-R3al-0ne"),
    (
        "PGPASSWORD before a command",
        "PGPASSWORD=Pg5ecretPw9 pg_dump -h db.internal -U app shop > shop.sql\n",
        "Pg5ecretPw9",
    ),
    (
        "env password passed to docker",
        "docker run -e MYSQL_ROOT_PASSWORD=My5qlRootPw -d mysql:8\n",
        "My5qlRootPw",
    ),
    ("unquoted password containing pass", "db:\n  password: PassW0rd2024!\n", "PassW0rd2024!"),
    ("unquoted password, name-like with digits", "password = Passw0rdX\n", "Passw0rdX"),
]

# Ordinary code and config that must come through unchanged.
NOT_SECRETS: list[str] = [
    'password = request.form["password"]\n',
    "token = self._next_token()\n",
    "self.password = password\n",
    "def check_password(password: str) -> bool:\n",
    "    password: str\n",
    "  password: string;\n",
    'api_key = "<your-key>"\n',
    'password = "changeme"\n',
    'API_KEY = "your_api_key_here"\n',
    'tokenizer = "wordpiece"\n',
    'token_type = "bearer"\n',
    "max_tokens = 512\n",
    'if token == "(":\n',
    'token = "identifier"\n',
    'secret = os.environ["SECRET"]\n',
    'SECRET_KEY = os.environ.get("SECRET_KEY")\n',
    "password_hash = bcrypt.hash(pw)\n",
    'url = "https://example.com/pkg@v2"\n',
    "git@github.com:org/repo.git\n",
    "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n",
    "DB_PASSWORD=${DB_PASSWORD}\n",
    "secretName: my-tls-secret\n",
    'label = "Password"\n',
    'monkey = "banana-split-123"\n',
    "export PATH=/usr/local/bin:$PATH\n",
    'key = "value"\n',
    '"auth": "none",\n',
    "Basic usage of the client\n",
    "postgres://localhost/app\n",
    # near misses of the issue-22 rules
    'DB_PASSWORD = "my_password"\n',
    'API_KEY = "the-api-key"\n',
    "password = db_password\n",
    "password: PASSWORD\n",
    "password = password2\n",
    "PGPASSWORD=$PGPASS pg_dump shop\n",
    "PGPASSWORD=${DB_PASSWORD} psql -h db\n",
    'private_key = "/etc/ssl/private/server.key"\n',
    'SECRET_KEY = "%(secret)s"\n',
    "run: KEY_FILE=keys/prod.pem deploy.sh\n",
]

# Files skipped by name or path before anything is read (relative path, content).
SECRET_FILES: list[tuple[str, str]] = [
    (".envrc", "export TOKEN=envrcSecretValue9\n"),
    ("production.env", "DB_PASS=prodEnvSecret9\n"),
    ("infra/prod.tfvars", 'db_password = "tfvarsSecret9"\n'),
    ("infra/terraform.tfstate", '{"password": "tfstateSecret9"}\n'),
    (".dockercfg", '{"https://index.docker.io/v1/": {"auth": "ZG9ja2VyY2ZnU2VjcmV0"}}\n'),
    ("home/.docker/config.json", '{"auths": {"r": {"auth": "ZG9ja2VyQ29uZmlnU2VjcmV0"}}}\n'),
    ("home/.kube/config", "users:\n- user:\n    token: kubeConfigSecret9\n"),
    ("home/.aws/credentials", "[default]\naws_secret_access_key = awsCredsFileSecret9\n"),
    (".s3cfg", "[default]\nsecret_key = s3cfgSecret9\n"),
    ("vpn/client.ovpn", "<key>\novpnSecret9\n</key>\n"),
]
