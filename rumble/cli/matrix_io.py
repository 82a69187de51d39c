"""The pairwise-matrix CSV that ``rumble rank --matrix`` reads, and the result tables ``rumble rank`` prints.

The CSV: a header row of names, then one row per name whose first cell is that name; the cell in
row X, column Y is X's score against Y (for a rumble: X's pairing APS against Y, in percent; for
an election: the voters preferring X to Y). An empty cell is a missing pairing; the diagonal is
ignored. The header may start with a corner cell (empty, or any label) above the row names. Rows
may come in any order; the result keeps the header's.
"""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np

from rumble.rankings.pairwise import Ranking


class MatrixFileError(ValueError):
    """A malformed matrix file: the message has one line per problem, each naming where it is."""


def read_matrix_csv(text: str) -> tuple[list[str], np.ndarray]:
    """(names, d) from the CSV ``text``, or MatrixFileError listing every problem found."""
    lines = [(n, [cell.strip() for cell in row]) for n, row in _rows(text) if any(cell.strip() for cell in row)]
    if not lines:
        raise MatrixFileError("the file has no header row of names")
    (at, header), body = lines[0], lines[1:]
    corner = header[0] == "" or len(header) == len(body) + 1
    names = header[1:] if corner else header
    problems = _header_problems(names, len(body), at, first_column=2 if corner else 1)
    if problems:
        raise MatrixFileError("\n".join(problems))
    d = np.full((len(names), len(names)), np.nan)
    problems = _fill(d, names, body)
    if problems:
        raise MatrixFileError("\n".join(problems))
    np.fill_diagonal(d, np.nan)
    return names, d


def _rows(text: str):
    reader = csv.reader(io.StringIO(text))
    try:
        for row in reader:
            yield reader.line_num, row
    except csv.Error as error:
        raise MatrixFileError(f"line {reader.line_num}: {error}") from None


def _header_problems(names: list[str], rows: int, line: int, first_column: int) -> list[str]:
    if len(names) != rows:
        return [f"line {line}: the header has {len(names)} names but {rows} rows follow (one row per name)"]
    problems = [f"line {line}: column {i + first_column} has no name" for i, name in enumerate(names) if not name]
    seen: set[str] = set()
    for name in names:
        if name and name in seen:
            problems.append(f"line {line}: the name {name!r} appears twice")
        seen.add(name)
    return problems


def _fill(d: np.ndarray, names: list[str], body: list[tuple[int, list[str]]]) -> list[str]:
    """Put each row's numbers into ``d``; return the problems found."""
    index = {name: i for i, name in enumerate(names)}
    problems, done = [], set()
    for line, row in body:
        name = row[0]
        if name not in index:
            problems.append(f"line {line}: the row name {name!r} is not in the header")
        elif name in done:
            problems.append(f"line {line}: a second row for {name!r}")
        elif len(row) != len(names) + 1:
            done.add(name)
            problems.append(f"line {line}: {len(row)} cells, expected {len(names) + 1} (the name, then one per column)")
        else:
            done.add(name)
            problems += [
                f"line {line}, column {names[j]!r}: {p}"
                for j, p in _parse_cells(d[index[name]], row[1:])
                if j != index[name]
            ]
    return problems + [f"no row for {name!r}" for name in names if name not in done]


def _parse_cells(target: np.ndarray, cells: list[str]):
    """Write the numbers of ``cells`` into ``target``; yield (column, problem) for each bad cell."""
    for j, cell in enumerate(cells):
        if cell == "":
            continue
        try:
            value = float(cell)
        except ValueError:
            yield j, f"{cell!r} is not a number"
            continue
        if not math.isfinite(value):
            yield j, f"{cell!r} is not a finite number (leave a missing pairing empty)"
        elif value < 0:
            yield j, f"{cell!r} is negative (a score is a share or a count of voters)"
        else:
            target[j] = value


def result_rows(names: list[str], kept: np.ndarray, ranks: dict[str, Ranking]) -> list[dict]:
    """One flat dict per bot: ``name``, then ``<method>_rank`` and (if it has scores) ``<method>_score``.

    Sorted by the first method's rank, then name; bots left out of the ranking (no pairing) come
    last with empty values.
    """
    positions = np.flatnonzero(kept).tolist()
    rows: list[dict[str, str | int | float | None]] = [{"name": name} for name in names]
    for method, ranking in ranks.items():
        for row in rows:
            row[f"{method}_rank"] = None
            if ranking.scores is not None:
                row[f"{method}_score"] = None
        for k, i in enumerate(positions):
            rows[i][f"{method}_rank"] = int(ranking.ranks[k])
            if ranking.scores is not None:
                score = float(ranking.scores[k])
                rows[i][f"{method}_score"] = score if math.isfinite(score) else None
    first = f"{next(iter(ranks))}_rank" if ranks else None
    return sorted(rows, key=lambda r: (r.get(first) is None, r.get(first) or 0, r["name"]))


def format_table(rows: list[dict]) -> str:
    """``rows`` as an aligned text table: the name left-aligned, numbers right-aligned."""
    if not rows:
        return ""
    keys = list(rows[0])
    titles = [key.removesuffix("_rank").replace("_score", " score") for key in keys]
    cells = [[_text(row[key]) for key in keys] for row in rows]
    widths = [max(len(title), *(len(line[k]) for line in cells)) for k, title in enumerate(titles)]

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) if k == 0 else v.rjust(w) for k, (v, w) in enumerate(zip(values, widths))).rstrip()

    return "\n".join([line(titles), line(["-" * w for w in widths]), *map(line, cells)]) + "\n"


def _text(value) -> str:
    if value is None:
        return ""
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def format_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return out.getvalue()


def format_json(rows: list[dict]) -> str:
    return json.dumps(rows, ensure_ascii=False, indent=1) + "\n"
