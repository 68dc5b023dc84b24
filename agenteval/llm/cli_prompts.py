"""Password flags that take no value: the program prompts for the password instead.

`psql -U app -W app_db` and `pg_dump --password app_db` prompt (`-W`/`--password` are
switches; the next word is the database), so do `mysql --password db` and `mysql -p db`
(only a glued `-pPW` or `--password=PW` is one). The generic `--password` rule
(`llm.secret_rules`) asks here before it takes the word after such a flag as a password;
the programs that do take one on their command line are `llm.credential_forms`' table.
"""

from __future__ import annotations

import re

_POSTGRES = (
    "psql", "pg_dump", "pg_dumpall", "pg_restore", "createdb", "dropdb", "createuser",
    "dropuser", "vacuumdb", "reindexdb", "clusterdb", "pgbench", "pg_basebackup",
    "pg_isready", "pg_receivewal", "pg_recvlogical",
)  # fmt: skip
_MYSQL = ("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mariadb")
# Program -> its switches that prompt for a password and take no value after a blank.
PROMPTING: dict[str, tuple[str, ...]] = {
    **{program: ("-W", "--password") for program in _POSTGRES},
    **{program: ("-p", "--password") for program in _MYSQL},
}
_PROGRAM = re.compile(
    r"(?<![\w.\-])(?:[\w.\-~]*/)?(" + "|".join(sorted(PROMPTING, key=len, reverse=True)) + r")\b"
)


def prompts_for_password(text: str, flag_at: int, flag: str) -> bool:
    """Whether `flag`, standing at `flag_at` in `text` with a blank after it, is a switch
    of the command it belongs to (the command runs from the line's last `|`, `;` or `&`)."""
    line_start = max(text.rfind(c, 0, flag_at) for c in "\n|;&") + 1
    programs = _PROGRAM.findall(text, line_start, flag_at)
    return bool(programs) and flag in PROMPTING[programs[-1]]
