"""The scrubber's second pass (issue 43): credentials in the forms programs take them, provider
prefixes, personal numbers of any country, every home-folder form, values cut short. Each
rule beside the look-alikes it must leave byte for byte. Pure functions, no files."""

from __future__ import annotations

import pytest

from agenteval.benchmarks.sessions.privacy import SessionScrubber
from agenteval.llm.credential_forms import CLI_PASSWORDS, CLI_POSITIONAL, GLUED, VALUE
from agenteval.llm.scrub import REDACTED, Scrubber

PASSWORD = "Quill#47Dune-Kiln"


def _command(program: str, flag: str, how: str, after: str) -> str:
    value = {VALUE: PASSWORD, GLUED: PASSWORD, "pass:": f"pass:{PASSWORD}"}.get(
        how, f"svc{how}{PASSWORD}"
    )
    joined = f"{flag}{value}" if how == GLUED else f"{flag} {value}"
    return " ".join(w for w in (program, after, "-x", joined, "target") if w)


def test_every_row_of_the_cli_table_redacts_its_password_and_keeps_the_rest() -> None:
    scrubber = Scrubber()
    for row in CLI_PASSWORDS:
        for program in row.programs:
            for flag in row.flags:
                line = _command(program, flag, row.how, row.after)
                out = scrubber.scrub_text(line)
                assert PASSWORD not in out, line
                assert out.startswith(program) and out.endswith(" target"), (line, out)
                # The same command reading the password from the environment is left alone.
                placeholder = line.replace(PASSWORD, "$DEPLOY_PASSWORD")
                assert scrubber.scrub_text(placeholder) == placeholder, placeholder


def test_every_positional_row_redacts_its_argument() -> None:
    scrubber = Scrubber()
    for row in CLI_POSITIONAL:
        when = row.when[0] if row.when else ""
        for program in row.programs:
            head = f"{program} -{when}" if len(when) == 1 else f"{program} {when}".strip()
            args = ["first", "second", "third"]
            value = f"scott/{PASSWORD}@db" if row.how == "/" else PASSWORD
            args[row.position if row.position >= 0 else len(args) - 1] = value
            if row.how == "unc":  # the password follows the share
                args = ["Z:", r"\\srv\share", PASSWORD, "/user:bob"]
            line = f"{head} {' '.join(args)}"
            assert PASSWORD not in scrubber.scrub_text(line), line


@pytest.mark.parametrize(
    "text",
    [
        "docker run -p 8080:80 nginx:1.27",  # -p publishes a port outside `docker login`
        "mysql -u root -p shop",  # -p alone prompts; shop is the database
        "htpasswd -c /etc/nginx/.htpasswd admin",  # no -b: the password is prompted for
        "sqlplus / as sysdba",
        "openssl rsa -in key.pem -passin env:KEY_PASS",
        "smbclient -U guest% //nas/public",
        "vault login -method=oidc role=dev",
        "ports 5432:5432 and 6379:6379",
        "x &= ~mask; y = ~flags",
        "edit ~/.config/acme/settings.toml",
        "IBAN DE00 1234 5678 9012 3456 78 fails its check digits",
        "zip 94103-1234 and build 1.24.3.1 on 2026-11-03",
        "git show 9fceb02d0ae5 and 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "echo hello | sudo tee /etc/motd",
        "use sshpass -p with care; redis-cli -a flag, or ldapsearch -w option.",
        "k8s node:30080:tcp:svc:backend and a:1:b:c:longvalue",  # colon lists, no .pgpass
        # a sentence naming a secret without giving one
        "the password reset link expires after 30 minutes; the token expires in 3600s",
        "the token is refreshed by getToken() every 3600s; GCP Secret Manager holds it",
        "password for db01 is stored in ~/.pgpass; mongosh --password --host db",
        "the secret sauce is v2.1.0-rc1 and the secret my-service-v2 too",
        r"net use Z: \\srv\share * /user:bob and ftp> user anonymous",
        "echo $CR_PAT | docker login ghcr.io --password-stdin",
        "logs under 2024/11/03 and born on a Monday",
        # digits some region would dial, but grouped as none writes a phone number
        "seed 42 1337 2024, PID 12345 67890, ids 4417 8812 9931, weights 0.25 0.25 0.5",
        # psql's -W and --password prompt: the next word is the database (llm.cli_prompts)
        "psql -U app -W app_db; pg_dump -U app --password inventory2024 > x.sql",
        # public ids by prefix and shape; a hook's route words; a login's host:port
        "ULID 01HZX3K8Q4N7B2M5R9T6V8W0YC, pi_3PqrGrbkF8Mnxs2d4Q3spu, req_011Ce2Kbt9k1nWRNiKjt3D"
        " from https://example.com/webhooks/stripe-v2/events; ssh to localhost:2222 to log in",
        # content-addressed names: a cache key (a prefix, then a digest), a remote cache's
        # digest/size, a Nix store path; prose about passwords in unspaced scripts
        "restored from cache-key: Linux-pip-"
        + "3f2a" * 16
        + "; digest "
        + "9c0e" * 16
        + "/4096 missing; /nix/store/0c7wzp2kq9xlb5c1vvg3hd9a8f4m6n2r-openssl-3.0.14/lib",
        "密码是必填项; 비밀번호는 8자 이상",
    ],
)
def test_look_alikes_of_the_new_rules_are_left_alone(text: str) -> None:
    assert Scrubber(personal=True).scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("machine ftp.corp.example login nightly password Gr4vel~Heron~7", "Gr4vel~Heron~7"),
        ("default\n  login anonymous\n  password Sl8te.Owl.31", "Sl8te.Owl.31"),
        ("`db.corp.example:5432:orders:app:Qu4il-Marsh-9`", "Qu4il-Marsh-9"),
        ("db:5432:shop:shop:Reed.Finch-40", "Reed.Finch-40"),  # a compose service's name
        ('requests.get(u, auth=("svc", "Tide!Pool-88"))', "Tide!Pool-88"),
        ("SENTRY_DSN=https://0a1b2c3d4e5f60718293a4b5c6d7e8f9@o1.ingest.sentry.io/2", "0a1b2c3d"),
        (
            'Client("AC8f2e4d6b0a1c3e5f7a9b1d3f5e7c9a2b", "e41f9a2c7b3d8e6f0a5c1b9d2e7f4a3c")',
            "e41f9a",
        ),
        ("xapp-1-A0123456789-1234567890123-" + "ab" * 32, "xapp-1-A0123456789"),
        ("dapi" + "c0ffee12" * 4, "c0ffee12c0ffee12"),
        ("doctl auth init -t dop_v1_" + "be" * 32, "bebebebebebe"),
        ("AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2, "QPZRY9X8GF2T"),
        ("mysql -uroot -p'Oak.Fern-22' shop", "Oak.Fern-22"),  # quotes glued to the flag
        ('echo "Oak.Fern-22" | podman login -u bot --password-stdin q.io', "Oak.Fern-22"),
        ("echo Oak.Fern-22 | sudo -S true", "Oak.Fern-22"),
        ("$p = ConvertTo-SecureString 'Oak.Fern-22' -AsPlainText -Force", "Oak.Fern-22"),
        ("<configuration><password>Oak.Fern-22</password></configuration>", "Oak.Fern-22"),
        ('<add key="DbPassword" value="Oak.Fern-22" />', "Oak.Fern-22"),
        ("the password is Oak.Fern-22 until Friday", "Oak.Fern-22"),
        ("wget --header='Authorization: token Oak.Fern-22' u", "Oak.Fern-22"),
        ("pw: Oak.Fern-22", "Oak.Fern-22"),
        ("ftp> user bob Oak.Fern-22", "Oak.Fern-22"),
        (r"net use Z: \\srv\share Oak.Fern-22 /user:CORP\bob", "Oak.Fern-22"),
        ("sudo -S <<< 'Oak.Fern-22'", "Oak.Fern-22"),
        ("rclone config create r sftp host h user bob pass Oak.Fern-22", "Oak.Fern-22"),
        # counted from the front: prose after the command is no password
        ("ran htpasswd -bB -C 12 .htpasswd admin Oak.Fern-22 and got 401", "Oak.Fern-22"),
        ("POST https://hooks.zapier.com/hooks/catch/123456/5uts1cj/", "5uts1cj"),
        ("creds as admin / Oak.Fern-22 for staging", "Oak.Fern-22"),
        ("use root:Oak.Fern-22 for ssh login", "Oak.Fern-22"),
        ("pw for the test tenant: Oak.Fern-22", "Oak.Fern-22"),
        ("the password is Reed.Finch-40 and the admin panel's is Oak.Fern-22", "Oak.Fern-22"),
        ("Recovery codes:\n- nhpe-vfww\n- kq3d-8xzp\n- rtmn-44ab", "nhpe-vfww"),
        # a password named in other languages: spaced scripts, and unspaced ones (CJK) whose
        # name has its copula or particle glued on
        ("Пароль от сервера сборки: VetrKlnDhz.", "VetrKlnDhz"),
        ("veritabanı şifresi: Kartal-19x", "Kartal-19x"),
        ("测试环境的密码是 Qiao-88Lin，别外传", "Qiao-88Lin"),
        ("스테이징 서버 비밀번호는 Bada7Wave 입니다", "Bada7Wave"),
    ],
)
def test_credential_forms_and_provider_prefixes_are_redacted(text: str, gone: str) -> None:
    out = Scrubber().scrub_text(text)
    assert gone not in out and REDACTED in out, out


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("wire it to FR76 3000 6000 0112 3456 7890 189 today", "3456 7890"),
        ("IBAN: DE89370400440532013000", "DE89370400440532013000"),
        ("pay to es9121000418450200051332 please", "es9121000418450200051332"),  # lower case
        ("employee NI number QQ 12 34 56 C", "12 34 56"),
        ("My passport number is 548190372.", "548190372"),
        ("Rückruf unter +49 (0)30 90182077", "90182077"),
        ("mobile:+61 412 345 678 (after 5pm)", "345 678"),
        ("mon portable: 06 12 34 56 78", "34 56 78"),
        ("ring 020 7946 0958", "7946 0958"),
        ("DOB: 12/03/1984", "12/03/1984"),
        ("write me on https://wa.me/4917784904655 or tel:+49-177-8490", "4917784904655"),
    ],
)
def test_personal_numbers_of_any_country_are_redacted(text: str, gone: str) -> None:
    assert gone not in Scrubber(personal=True).scrub_text(text)
    assert Scrubber(personal=False).scrub_text(text) == text  # only for a person's own text


@pytest.mark.parametrize(
    "text",
    [
        "toolbox mounts /var/home/ingrid/src",
        "cd /mnt/c/Users/ingrid/projects",
        "the wheel is in C:/Users/ingrid/Documents",
        r"open C:\Users\ingrid\AppData\x.ini",
        r"\\wsl$\Ubuntu\home\ingrid\repo is slow",
        r"\\wsl.localhost\Debian\home\ingrid\repo",
        "scp build.tgz ~ingrid/incoming/",
        "/home/ingrid/.bashrc and /Users/ingrid/Downloads",
        "NFS homes: /export/home/ingrid/work",
    ],
)
def test_every_home_folder_form_becomes_tilde_and_its_user_is_learned(text: str) -> None:
    assert "ingrid" not in Scrubber(personal=True).scrub_text(text)
    sessions = SessionScrubber(env={})
    assert "ingrid" not in sessions.scrub_text(text)
    assert sessions.scrub_text("ingrid wrote it") == "user wrote it"  # the name, learned


def test_a_value_cut_short_is_redacted_where_it_stands_and_nothing_else() -> None:
    key = "dop_v1_" + "3f9a" * 16
    case = {
        "command": f"grep -rn '{key[:30]}' . ; echo ok",
        "request": f"doctl auth init -t {key}",
        "note": "dop_v1_ tokens are 64 hex characters",  # the prefix alone: no value
    }
    clean = Scrubber().scrub(case)
    assert key[:14] not in str(clean)
    assert clean["command"] == f"grep -rn '{REDACTED}' . ; echo ok"
    assert clean["note"] == case["note"]


def test_sql_password_clauses_of_every_dialect_and_cookies_are_redacted() -> None:
    from agenteval.llm.scrub import scrub_text

    secret = "Nb4#rT8qLz2w"
    forms = [
        f"ALTER USER 'svc'@'%' IDENTIFIED BY '{secret}';",
        f"CREATE USER x IDENTIFIED WITH caching_sha2_password BY '{secret}';",
        f"ALTER USER scott IDENTIFIED BY {secret};",
        f"CREATE ROLE app LOGIN ENCRYPTED PASSWORD '{secret}';",
        f"CREATE LOGIN app WITH PASSWORD = N'{secret}';",
        f"SET PASSWORD FOR 'bob'@'localhost' = PASSWORD('{secret}');",
        f"CREATE MASTER KEY ENCRYPTION BY PASSWORD = '{secret}';",
        f"Cookie: theme=dark; sessionid={secret}x9Kd",
        f"Set-Cookie: JSESSIONID={secret}x9Kd; Path=/; HttpOnly",
        f"curl -b 'remember_token={secret}x9Kd' https://app.local",
    ]
    for text in forms:
        assert secret not in scrub_text(text).text, text
    for kept in (
        "requests.get(url, auth=HTTPBasicAuth(user, pw))",
        "ALTER USER scott ACCOUNT UNLOCK;",
        "Set-Cookie: theme=dark; Path=/",
    ):
        assert scrub_text(kept).text == kept, kept


_CLI_SECRET = "Vq7Lm2Rx9Tz4"
_WRAPPER_SECRET = "Zz9Yq8Wx7V"
_CLI_LINES = (
    f"redis-cli -h r1 -a {_CLI_SECRET} ping",
    f"mysql -uroot -p{_CLI_SECRET} shop",
    f"PGPASSWORD={_CLI_SECRET} psql -h db -U app",
    f"sshpass -p {_CLI_SECRET} ssh deploy@h",
    f"curl -u admin:{_CLI_SECRET} https://h/api",
    f"smbclient //fs/share -U alice%{_CLI_SECRET}",
    f"ldapsearch -x -D cn=admin -w {_CLI_SECRET} -b dc=x",
    f"mongosh mongodb://h/db -u app -p {_CLI_SECRET}",
    f"openssl enc -aes-256-cbc -k {_CLI_SECRET} -in f",
    f"openssl pkcs12 -export -passout pass:{_CLI_SECRET}",
    f"snmpwalk -v2c -c {_CLI_SECRET} 10.0.0.9",
)
_WRAPPERS = (
    "{}",
    "sudo {}",
    f"sshpass -p {_WRAPPER_SECRET} ssh ops@h {{}}",  # rt43f: redis-cli after sshpass kept its -a
    'ssh ops@h "{}"',
    "kubectl exec -it pod -- {}",
)


@pytest.mark.parametrize("line", _CLI_LINES)
def test_a_cli_password_goes_however_the_command_is_run(line: str) -> None:
    scrubber = SessionScrubber()
    for wrapper in _WRAPPERS:
        out = scrubber.scrub_text(wrapper.format(line))
        assert _CLI_SECRET not in out and _WRAPPER_SECRET not in out, out


def test_a_cli_flag_given_no_secret_stays() -> None:
    scrubber = Scrubber()
    for line in (
        "snmpwalk -v2c -c public 10.0.0.9",
        "openssl enc -k $PASS -in f",
        "sshpass -p $SSHPASS ssh h redis-cli -a $REDIS_PW ping",
    ):
        assert scrubber.scrub_text(line) == line
