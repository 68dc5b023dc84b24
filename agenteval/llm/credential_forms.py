"""Credentials in the forms programs take them: command lines and credential files.

`CLI_PASSWORDS` is the one table of which programs take a password (or token) on their
command line and how: after a flag (`sshpass -p PW`, `redis-cli -a PW`, `ldapsearch -w PW`),
glued to it only (`mysql -pPW`: `mysql -p db` prompts), inside a `user%password` or
`user:password` value (`smbclient -U u%PW`, `curl -u u:PW`), after a scheme (`openssl -passin
pass:PW`). `CLI_POSITIONAL` holds the programs that take one as an argument (`htpasswd -b
file user PW`, `rabbitmqctl add_user u PW`, `sqlplus user/PW@db`, `net use \\\\srv\\share
PW`). A command line is cut into words the way a shell would (quotes kept together) up to
its first `|`, `;`, `&` or line end, then each row is applied; a short lowercase word where
the password would be is prose about the command, not one. A password handed on standard
input (`echo PW | docker login --password-stdin`, `sudo -S <<< PW`, `chpasswd`) and ftp's
`ftp> user NAME PW` are rules of their own. Flags every program spells alike
(`--password`, `--token`, `--api-key`) are `llm.secret_rules`' generic rule.

SQL's password clauses in every dialect (`IDENTIFIED [WITH plugin] BY`, `[ENCRYPTED]
PASSWORD '...'`, `WITH PASSWORD =`, `PASSWORD('...')`, `SET PASSWORD`) and cookies (each
pair of a `Cookie:` or `Set-Cookie:` header, a session cookie wherever it stands) are rules
here too.

Credential files: `.netrc` (`machine h login u password PW`), `.pgpass`
(`host:port:db:user:PW`); `.my.cnf`, `.pypirc`, `.npmrc`, docker's `config.json` (`"auth":`)
and `.git-credentials` (URLs) are the name=value and URL rules'.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from agenteval.llm.secret_rules import REDACTED, Rule, plausible_secret

VALUE, GLUED = "value", "glued"  # the flag's next word or its glued rest; only glued
UNC = "unc"  # the word after a \\\\server\\share path


class Takes(NamedTuple):
    programs: tuple[str, ...]
    flags: tuple[str, ...]
    how: str = VALUE  # VALUE, GLUED, or the separator / scheme the password follows
    after: str = ""  # a subcommand the flag means a password under (`docker login -p`)


_LDAP = ("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapwhoami", "ldappasswd")
_MYSQL = ("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck")
_MONGO = ("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport")
_SMB = ("smbclient", "rpcclient", "smbcacls", "smbget", "smbmap", "net")
_SNMP = ("snmpwalk", "snmpget", "snmpset", "snmpbulkwalk", "snmpbulkget", "snmptrap", "snmpgetnext")
_REGISTRY = ("docker", "podman", "buildah", "skopeo", "nerdctl", "helm", "oras", "crane")
CLI_PASSWORDS = (
    Takes(("sshpass",), ("-p",)),
    Takes(("redis-cli", "keydb-cli", "valkey-cli"), ("-a", "--pass")),
    Takes((*_LDAP, "ldapcompare", "ldapmodrdn", "ldapexop"), ("-w",)),
    Takes((*_MYSQL, "mysqlpump", "mysqlsh", "mariadb", "mariadb-dump"), ("-p",), GLUED),
    Takes((*_REGISTRY, "regctl", "az"), ("-p", "--password"), after="login"),
    Takes(("twine", "rdesktop"), ("-p", "--password")),
    Takes(_MONGO, ("-p", "--password")),
    Takes(_SMB, ("-U", "--user"), "%"),
    Takes(("curl",), ("-u", "--user", "-U", "--proxy-user"), ":"),
    Takes(("curl",), ("--oauth2-bearer",)),
    Takes(("lftp",), ("-u", "--user"), ","),
    Takes(("wget",), ("--password", "--http-password", "--ftp-password", "--proxy-password")),
    Takes(("openssl",), ("-passin", "-passout", "-pass", "-kfile"), "pass:"),
    Takes(("openssl",), ("-k",)),  # openssl enc -k PW: the password itself
    Takes(("sqlcmd", "bcp", "osql", "ipmitool", "mosquitto_pub", "mosquitto_sub"), ("-P",)),
    Takes(("mosquitto_pub", "mosquitto_sub"), ("--pw",)),
    Takes(("zip", "unzip", "zipcloak"), ("-P",)),
    Takes(("7z", "7za", "7zz"), ("-p",), GLUED),
    Takes(("keytool",), ("-storepass", "-keypass", "-srcstorepass", "-deststorepass")),
    Takes(("gpg", "gpg2"), ("--passphrase",)),
    Takes(("ssh-keygen",), ("-N", "-P")),
    Takes(("doctl",), ("-t", "--access-token")),
    Takes(("pscp", "plink", "psftp"), ("-pw",)),
    Takes(("xfreerdp", "wfreerdp", "sdl-freerdp"), ("/p:",), GLUED),
    Takes(_SNMP, ("-A", "-X", "-c")),  # v3 pass phrases, v1/v2c's community
    Takes(("influx",), ("-password",)),
    Takes(("hdbsql",), ("-p",)),
    Takes(("nmcli",), ("password", "wifi-sec.psk", "802-1x.password")),
    Takes(("rclone",), ("pass", "password")),  # rclone config create NAME TYPE pass PW
)


class Positional(NamedTuple):
    programs: tuple[str, ...]
    when: tuple[str, ...]  # a short flag letter (htpasswd's b) or a subcommand; () always
    position: int  # among the words that are no option (after the subcommand); -1 the last
    how: str = VALUE  # or "/": the password follows user/ (and ends at @)
    valued: tuple[str, ...] = ()  # options whose next word is their value, not an argument
    fileless: str = ""  # a flag letter that drops the first argument (htpasswd -n: no file)


CLI_POSITIONAL = (
    # htpasswd -b[cBmsi...] FILE USER PW: counted from the front, so prose after the
    # command ("... and nginx still says 401") is no password; -C/-r take a value.
    Positional(("htpasswd",), ("b",), 2, valued=("-C", "-r"), fileless="n"),
    Positional(("rabbitmqctl",), ("add_user", "change_password", "authenticate_user"), -1),
    Positional(("wpa_passphrase",), (), 1),
    Positional(("vault",), ("login",), 0),
    Positional(("sqlplus", "rman", "expdp", "impdp", "sqlldr"), (), 0, "/"),
    Positional(("ConvertTo-SecureString",), (), 0),  # PowerShell: "pw" -AsPlainText -Force
    Positional(("net",), ("use",), 0, UNC),  # net use Z: \\srv\share PW /user:dom\u
)

_PROGRAMS = sorted(
    {p for row in (*CLI_PASSWORDS, *CLI_POSITIONAL) for p in row.programs}, key=len, reverse=True
)
COMMAND = re.compile(
    r"(?<![\w.\-])(?:[\w.\-~]*/)?(?P<program>"
    + "|".join(re.escape(p) for p in _PROGRAMS)
    + r")(?:\.exe)?[ \t]+(?P<args>(?:\"[^\"\n]*\"|'[^'\n]*'|\\.|[^|;&\n\"'`\\])+)"
)
# What a text must hold for any rule here to match (the scrubber's prefilter).
# What SQL_PASSWORD and COOKIE (below) need to match.
COOKIE_HINT = (
    r"|(?i:identified|set\s+password|password\s*[=(N'\"]|cookie"
    r"|(?:sess|sid|csrf|xsrf|auth|token|remember)[\w.\-]*=)"
)
CREDENTIAL_HINT = (
    r"(?<![\w.\-])(?:" + "|".join(re.escape(p) for p in _PROGRAMS) + r")[ \t]"
    r"|\bmachine\s|\bdefault\s|:(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:|--password-stdin|chpasswd|passwd|sudo|ftp>"
    + COOKIE_HINT
)
# A short lowercase word after a flag is prose about the command ("sshpass -p with care",
# "redis-cli -a flag"), not its password.
_PROSE_WORD = re.compile(r"[a-z]{1,7}[.,:;!?]?")
# A shell word: quoted parts join the text next to them (`-p'pw'`, `--password="a b"`).
_WORD = re.compile(r"(?:\"[^\"\n]*\"|'[^'\n]*'|\\.|[^\s\"'])+")


def _words(args: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group(0)) for m in _WORD.finditer(args)]


def _unquoted(start: int, word: str) -> tuple[int, str]:
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "\"'":
        return start + 1, word[1:-1]
    return start, word


def _secret_part(start: int, word: str, how: str) -> tuple[int, str] | None:
    """(offset, text) of the password inside a flag's value word."""
    start, word = _unquoted(start, word)
    if how not in (VALUE, GLUED):
        head, sep, tail = word.partition(how)
        if not sep or (how == "pass:" and head) or (how != "pass:" and not head):
            return None  # `-passin env:X`, `sqlplus /nolog`, `-U guest%`
        start, word = start + len(head) + len(sep), tail
        if how == "/":
            word = word.split("@", 1)[0]
    if word.startswith("-") or _PROSE_WORD.fullmatch(word) or not plausible_secret(word):
        return None
    return start, word


def _flag_values(program: str, words: list[tuple[int, str]]) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for row in CLI_PASSWORDS:
        if program not in row.programs:
            continue
        for i, (start, word) in enumerate(words):
            if row.after and not any(w == row.after for _, w in words[:i]):
                continue
            for flag in row.flags:
                if word == flag and row.how != GLUED and i + 1 < len(words):
                    part = _secret_part(*words[i + 1], row.how)
                elif word.startswith(flag + "=") and flag.startswith("--"):
                    part = _secret_part(start + len(flag) + 1, word[len(flag) + 1 :], row.how)
                elif word.startswith(flag) and len(word) > len(flag) and not flag.startswith("--"):
                    if row.how != GLUED and len(flag) > 2:
                        continue  # -passin is not -pass + "in"
                    part = _secret_part(start + len(flag), word[len(flag) :], row.how)
                else:
                    continue
                if part is not None:
                    found.append(part)
    return found


def _arguments(words: list[tuple[int, str]], valued: tuple[str, ...]) -> list[tuple[int, str]]:
    """The words that are no option nor an option's value (`-C 12`)."""
    args, skip = [], False
    for start, word in words:
        if not skip and not word.startswith("-"):
            args.append((start, word))
        skip = not skip and word in valued
    return args


def _positional_values(program: str, words: list[tuple[int, str]]) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for row in CLI_POSITIONAL:
        if program not in row.programs:
            continue
        args = plain = _arguments(words, row.valued)
        letters = "".join(w[1:] for _, w in words if re.fullmatch(r"-[A-Za-z]+", w))
        position = row.position - (1 if row.fileless and row.fileless in letters else 0)
        if row.when:
            if plain and plain[0][1] in row.when:
                args = plain[1:]
            elif not set(letters) & set(row.when):
                continue
        if row.how == UNC:  # the word after the share, unless an option (/user:) or `*`
            shares = [i for i, (_, w) in enumerate(args) if w.startswith("\\\\")]
            args = args[shares[0] + 1 :] if shares else []
            args = [(s, w) for s, w in args if not w.startswith(("/", "*"))][:1]
        if not args or not -len(args) <= position < len(args):
            continue
        part = _secret_part(*args[position], VALUE if row.how == UNC else row.how)
        if part is not None and "=" not in part[1]:
            found.append(part)
    return found


_PROGRAM_WORD = re.compile(
    r"(?:[\w.\-~]*/)?(?P<program>" + "|".join(re.escape(p) for p in _PROGRAMS) + r")(?:\.exe)?"
)


Words = list[tuple[int, str]]


def _segments(program: str, words: Words) -> list[tuple[str, Words]]:
    """The command and each command it runs (`sshpass -p PW ssh host redis-cli -a PW2`,
    `sudo mysql -pPW`): a later word naming a program starts that program's own flags."""
    segments: list[tuple[str, Words]] = [(program, [])]
    for start, word in words:
        nested = _PROGRAM_WORD.fullmatch(word)
        if nested and segments[-1][1]:
            segments.append((nested.group("program"), []))
        else:
            segments[-1][1].append((start, word))
    return segments


def _command(match: re.Match[str]) -> str | None:
    program, args = match.group("program"), match.group("args")
    parts: list[tuple[int, str]] = []
    for name, words in _segments(program, _words(args)):
        parts += _flag_values(name, words) + _positional_values(name, words)
    if not parts:
        return None
    offset = match.start("args") - match.start()
    text = match.group(0)
    for start, secret in sorted(set(parts), reverse=True):
        at = offset + start
        text = text[:at] + REDACTED + text[at + len(secret) :]
    return text


def _keep_plausible_value(match: re.Match[str]) -> str | None:
    return match.group(1) + REDACTED if plausible_secret(match.group("value")) else None


def _keep_head(match: re.Match[str]) -> str | None:
    return match.group(1) + REDACTED if plausible_secret(match.group(2)) else None


# A password handed to a program on its standard input: `echo pw | docker login
# --password-stdin`, `echo pw | sudo -S`, `echo 'user:pw' | chpasswd`, `passwd --stdin`.
_STDIN_READER = (
    r"(?:sudo[ \t]+-\w*S|[^|;&\n]*--password-stdin|chpasswd|[^|;&\n]*passwd[ \t]+--stdin)"
)
_SHELL_VALUE = r"(?P<value>\"[^\"\n]+\"|'[^'\n]+'|[^\s|;&]+)"
PIPED = re.compile(
    r"(\b(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+)?)"
    + _SHELL_VALUE
    + r"(?=[ \t]*\|[ \t]*"
    + _STDIN_READER
    + r")"
    # ...or given as a here-string: sudo -S <<< 'pw'
    r"|(" + _STDIN_READER + r"[^|;&\n]*?<<<[ \t]*)" + _SHELL_VALUE.replace("value", "here")
)
# The ftp client's own prompt: `ftp> user NAME PASSWORD`.
FTP_USER = re.compile(r"(\bftp>[ \t]*user[ \t]+\S+[ \t]+)(?P<value>\S+)")


def _piped(match: re.Match[str]) -> str | None:
    name = "value" if match.group("value") is not None else "here"
    word = match.group(name)
    start, value = _unquoted(0, word)
    if not plausible_secret(value):
        return None
    head = match.string[match.start() : match.start(name)] + word[:start]
    return head + REDACTED + word[start + len(value) :]


def _pgpass(match: re.Match[str]) -> str | None:
    """A .pgpass line: a host (dotted, localhost, `*`) or PostgreSQL's port, then the
    password (`node:30080:tcp:svc:backend` is some other colon list)."""
    host, port = match.group("host"), match.group("port")
    if not ("." in host or host in ("localhost", "*") or port in _PG_PORTS):
        return None
    return match.group(1) + REDACTED if plausible_secret(match.group(4)) else None


_PG_PORTS = frozenset({"*", "6432", *(str(p) for p in range(5432, 5440))})


# SQL's password clauses in every dialect: MySQL/Oracle `IDENTIFIED [WITH plugin] BY [PASSWORD]
# 'pw'` (Oracle's unquoted too), PostgreSQL and Snowflake `[ENCRYPTED] PASSWORD 'pw'`, SQL
# Server `WITH PASSWORD = 'pw'` and `ENCRYPTION BY PASSWORD = 'pw'`, MySQL's `PASSWORD('pw')`
# and `SET PASSWORD ... = 'pw'`.
SQL_PASSWORD = re.compile(
    r"(?i)(\bidentified\s+(?:with\s+['\"`]?\w+['\"`]?\s+)?(?:by|as)\s+(?:password\s+)?['\"]?"
    r"|\b(?:encrypted\s+|unencrypted\s+)?password\s*(?:=\s*|\(\s*)?(?:N?['\"])"
    r"|\bset\s+password\b[^=\n]{0,80}=\s*(?:password\s*\(\s*)?['\"]"
    r"|\b(?:with|by)\s+password\s*=\s*N?['\"])"
    r"(?P<value>[^'\"\s;]{3,128})"
)
# A cookie's values: `Cookie:` and `Set-Cookie:` headers (every pair), and a session cookie
# wherever it stands (`sessionid=`, `JSESSIONID=`, `connect.sid=`, `_gh_sess=`, `PHPSESSID=`).
COOKIE = re.compile(
    r"(?i)((?:\bset-)?\bcookie\s*[:=]\s*(?:[^\n]*?[;,]\s*)?[\w.\-]{1,64}=|(?<![\w.\-])"
    r"(?:[\w.\-]*(?:sess|session|sid|csrf|xsrf|auth|token|remember)[\w.\-]*)=)"
    r"(?P<value>[^;,\s'\"\\()\[\]{}<>]{8,512})(?![^;,\s'\"\\)\]}>])"  # no call: auth=f(...)
)


# A whole Cookie / Set-Cookie header (curl's -b / --cookie too): every pair of it, each
# value judged alone, a cookie's attributes (Path, Expires, SameSite...) kept.
COOKIE_HEADER = re.compile(
    r"(?i)((?:\b(?:set-)?cookie[\"']?\s*[:=]\s*[\"']?|(?:^|\s)(?:-b|--cookie)\s+[\"']?))"
    r"(?P<value>[^\n\"']+)"
)
_PAIR = re.compile(r"(?P<name>[^=;,\s]+)=(?P<value>[^;,\s]*)")
_ATTRIBUTE = re.compile(
    r"(?i)path|domain|expires|max-age|samesite|secure|httponly|priority|partitioned|version"
)
# A cookie jar handed to an HTTP client: `cookies={"sessionid": "..."}`, `Client(cookies={..})`.
COOKIE_JAR = re.compile(r"(?i)\bcookies?[\"']?\s*(?:=|:|\()\s*\{[^{}\n]*\}")
_JAR_VALUE = re.compile(r"(?P<name>[\"'][^\"'\n]+[\"']\s*:\s*)[\"'](?P<value>[^\"'\n]+)[\"']")


def _session_value(value: str) -> bool:
    """A cookie's value that is a session's credential: generated (a digit among 16 or more
    characters: a lower-case session id reads as a word to `plausible_secret`) or plausible.
    A preference stays: `consent=accepted`, `theme=darkmode`, `lang=en`."""
    if value.lower() in ("true", "false", "deleted", "null", "none"):
        return False
    if not any(c.isdigit() for c in value) and len(value) < 16:
        return False
    generated = len(value) >= 16 and any(c.isdigit() for c in value) and value.isalnum()
    return generated or plausible_secret(value)


def _cookie(match: re.Match[str]) -> str | None:
    return match.group(1) + REDACTED if _session_value(match.group("value")) else None


def _header(match: re.Match[str]) -> str | None:
    def one(pair: re.Match[str]) -> str:
        name, value = pair.group("name"), pair.group("value")
        if _ATTRIBUTE.fullmatch(name) or not _session_value(value):
            return pair.group(0)
        return f"{name}={REDACTED}"

    pairs = _PAIR.sub(one, match.group("value"))
    return match.group(1) + pairs if pairs != match.group("value") else None


def _jar(match: re.Match[str]) -> str | None:
    jar = match.group(0)
    out = _JAR_VALUE.sub(
        lambda m: m.group("name") + '"' + REDACTED + '"' if _session_value(m.group("value"))
        else m.group(0),
        jar,
    )  # fmt: skip
    return out if out != jar else None


def credential_rules() -> list[Rule]:
    return [
        ("sql_password", SQL_PASSWORD, _keep_plausible_value),
        ("cookie_header", COOKIE_HEADER, _header),
        ("cookie", COOKIE, _cookie),
        ("cookie_jar", COOKIE_JAR, _jar),
        ("cli_password", COMMAND, _command),
        ("piped_password", PIPED, _piped),
        ("ftp_user", FTP_USER, _keep_plausible_value),
        (
            "netrc",
            re.compile(
                r"(\b(?:machine\s+\S+|default)(?:\s+(?:login|account|port)\s+\S+)*?"
                r"\s+password\s+)(\S+)"
            ),
            _keep_head,
        ),
        (
            "pgpass",
            re.compile(
                r"(?m)((?:^|(?<=[\s`'\"(=:]))(?P<host>[A-Za-z0-9_.\-*]+):(?P<port>\d{1,5}|\*):"
                r"[\w.\-*]+:[\w.@\-*]+:)([^\s:]+)(?=\s|$)"
            ),
            _pgpass,
        ),
    ]
