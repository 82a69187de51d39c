"""Which uploaders are established: trusted for what needs trust (retiring a bot by RemoveOldParticipant).

Pure code over plain data. The unit of trust is a *party*: an uploader name together with the
network its battles came from (``network``: an IPv4 /24, an IPv6 /48), written ``name@network``.
A name alone is free text any client may type, and one address is cheap: the network is what one
subscriber, host or small cloud account holds, so a stranger who rents many addresses in one block
is still one party per name, and a name typed from another network is another party.

A party is established when a maintainer vouched for it (that is how a new ladder starts: with its
operator's own clients), or when it *earned* it: its battles agree with those of the parties already
established, on pairings both played, over enough data. A maintainer's revocation overrides both.

**Agreement.** The candidate's residuals against the established parties alone
(``uploader_consistency.residuals``, others = the established, the variance scale pooled over their
battles): one z per shared pairing, about N(0, 1) for a party that reports what the established do.
Two tests, as in ``uploader_consistency`` but against that fixed reference, never against other
candidates (a crowd of strangers cannot vouch for each other):

* dispersion: Σ z² over the n shared pairings against χ²(n) (upper tail, Wilson and Hilferty's
  cube-root normal approximation, 1931): random or careless shares;
* bias: for each bot, its residuals from its own side, T = Σ z / sqrt(n_b); the largest |T|,
  two-sided, Bonferroni over the bots: a bot pushed up or down whenever it fights.

p is the smaller of the two doubled. A party disagrees when p < ``alpha``, on however little data;
it earns trust when it has at least ``min_battles`` battles on at least ``min_pairings`` pairings
shared with the established and p ≥ ``alpha``. Once
a party is established it joins the reference and the others are tested again (until none more
earns it): trust spreads only along agreement with what was trusted before.
"""

from __future__ import annotations

import ipaddress
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from rumble.rankings.uploader_consistency import (
    Share,
    Totals,
    normal_upper,
    pooled_scale,
    residuals,
    summed,
    totals,
)

IPV4_PREFIX, IPV6_PREFIX = 24, 48
ALPHA = 0.001  # below this p, a candidate's battles disagree with the established parties'
MIN_BATTLES = 100  # battles on pairings the established also played, before a party can earn trust
MIN_PAIRINGS = 20  # and that many such pairings
MIN_DEGREES = 50  # repeated battles of the established on a pairing, to measure the battle variance on theirs alone


def network(address: str | None) -> str:
    """The network a party is known by: ``203.0.113.0/24`` for an IPv4 address, its /48 for IPv6,
    ``unknown`` without one (a battle from ``rumble import``, or from before addresses were kept)."""
    if not address:
        return "unknown"
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return "unknown"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = IPV4_PREFIX if ip.version == 4 else IPV6_PREFIX
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


def party(name: str, address_or_network: str | None) -> str:
    """``name@network``: the key a party is known by (an address is taken to its network)."""
    text = (address_or_network or "").strip()
    return f"{name}@{text if '/' in text else network(text)}"


def named_party(name: str, where: str) -> str:
    """The party a maintainer names: an uploader name and an address or network of it (taken to the
    network parties are known by). ValueError, in plain words, for anything else."""
    name, where = name.strip(), where.strip()
    if not name or len(name) > 100 or "@" in name:
        raise ValueError("give the uploader's name as its client sends it (1 to 100 characters, no @)")
    try:
        found = ipaddress.ip_network(where, strict=False)
    except ValueError:
        raise ValueError(
            f"{where!r} is not an address or a network: give one the uploader sends from, "
            "like 203.0.113.7 or 203.0.113.0/24"
        ) from None
    return party(name, str(found.network_address))


@dataclass(frozen=True)
class Standing:
    """One party's standing in a rumble and why."""

    party: str
    established: bool
    how: str  # 'vouched', 'earned', 'revoked', 'not yet', 'disagrees'
    battles: int = 0  # on pairings shared with the established
    pairings: int = 0
    p: float | None = None
    why: str = ""

    def as_dict(self) -> dict:
        name, _, net = self.party.rpartition("@")
        return {
            "uploader": name,
            "network": net,
            "established": self.established,
            "how": self.how,
            "battles_shared": self.battles,
            "pairings_shared": self.pairings,
            "p": self.p,
            "why": self.why,
        }


def _scale(by_pairing: Totals, others: frozenset[str]) -> float:
    """The battle variance's scale (``pooled_scale``) from the established parties' battles when they
    played pairings more than once often enough (MIN_DEGREES), otherwise from everyone's: on a
    ladder where each party plays a pairing once the established alone show no spread."""
    n, _, _ = summed(by_pairing, np.arange(len(by_pairing.a)), by_pairing.left_out(others))
    degrees = int(np.maximum(n - 1, 0).sum())  # whole numbers far below 2^53: exact in any order
    return pooled_scale(by_pairing, others if degrees >= MIN_DEGREES else frozenset())


def chi_square_upper(total: float, n: int) -> float:
    """P(χ²(n) ≥ total) by Wilson and Hilferty's approximation: (X/n)^(1/3) is about normal with
    mean 1 − 2/(9n) and variance 2/(9n)."""
    if n <= 0:
        return 1.0
    v = 2.0 / (9.0 * n)
    return normal_upper(((total / n) ** (1.0 / 3.0) - (1.0 - v)) / math.sqrt(v))


def agreement(
    by_pairing: Totals, candidate: str, established: set[str], scale: float
) -> tuple[int, int, float | None, str]:
    """(battles, pairings shared with ``established``, p, what it found) for ``candidate``, over
    ``by_pairing`` with the variance scale ``scale``."""
    others = frozenset(by_pairing.uploaders) - established
    found = residuals(by_pairing, candidate, others, scale)
    battles, pairings = sum(r.battles for r in found), len(found)
    if not found:
        return 0, 0, None, "no pairing shared with an established uploader"
    z2 = sum(r.z * r.z for r in found)
    p_dispersion = chi_square_upper(z2, pairings)
    per_bot: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r in found:
        for bot, z in ((r.a, r.z), (r.b, -r.z)):
            per_bot[bot][0] += z
            per_bot[bot][1] += 1
    worst_bot, worst = max(((bot, abs(s) / math.sqrt(n)) for bot, (s, n) in per_bot.items()), key=lambda x: x[1])
    p_bias = min(1.0, len(per_bot) * 2.0 * normal_upper(worst))
    p = min(1.0, 2.0 * min(p_dispersion, p_bias))
    if p_dispersion <= p_bias:
        what = f"its shares scatter {math.sqrt(z2 / pairings):.2f} times as widely as expected"
    else:
        what = f"its shares for {worst_bot} lean {worst:.1f} standard errors one way"
    return battles, pairings, p, what


def standings(
    shares: Iterable[Share],
    vouched: set[str],
    revoked: set[str] | frozenset[str] = frozenset(),
    min_battles: int = MIN_BATTLES,
    min_pairings: int = MIN_PAIRINGS,
    alpha: float = ALPHA,
) -> dict[str, Standing]:
    """Every party of ``shares`` (their ``uploader`` is the party) and every vouched or revoked one,
    with its standing. ``vouched`` and ``revoked`` are parties (``party``); revoked wins."""
    return standings_of(totals(shares), vouched, revoked, min_battles, min_pairings, alpha)


def standings_of(
    by_pairing: Totals,
    vouched: set[str],
    revoked: set[str] | frozenset[str] = frozenset(),
    min_battles: int = MIN_BATTLES,
    min_pairings: int = MIN_PAIRINGS,
    alpha: float = ALPHA,
) -> dict[str, Standing]:
    """``standings`` over the parties' totals (``uploader_consistency.totals`` or ``from_sums``, each
    party as an uploader): the same standings as over their battles."""
    everyone = set(by_pairing.uploaders) | set(vouched) | set(revoked)
    found: dict[str, Standing] = {}
    established = set(vouched) - set(revoked)
    for key in established:
        found[key] = Standing(key, True, "vouched", why="vouched for by a maintainer")
    for key in set(revoked) & everyone:
        found[key] = Standing(key, False, "revoked", why="revoked by a maintainer")
    pending = everyone - established - set(revoked)
    changed = True
    while changed:  # each round tests the rest against what is established so far
        changed = False
        scale = _scale(by_pairing, frozenset(everyone - established))
        for candidate in sorted(pending):
            if not established:
                found[candidate] = Standing(candidate, False, "not yet", why="no uploader is established yet")
                continue
            battles, pairings, p, what = agreement(by_pairing, candidate, established, scale)
            if p is not None and p < alpha:  # disagreement shows on little data too
                why = f"disagrees with the established uploaders: {what} (p = {p:.3g} < {alpha:g})"
                found[candidate] = Standing(candidate, False, "disagrees", battles, pairings, p, why)
            elif battles < min_battles or pairings < min_pairings:
                why = (
                    f"{battles} battles on {pairings} pairings shared with established uploaders; "
                    f"trust needs {min_battles} battles on {min_pairings} pairings"
                )
                found[candidate] = Standing(candidate, False, "not yet", battles, pairings, p, why)
            else:
                why = (
                    f"agrees with the established uploaders on {pairings} pairings ({battles} battles; "
                    f"p = {p:.3g} ≥ {alpha:g})"
                )
                found[candidate] = Standing(candidate, True, "earned", battles, pairings, p, why)
                established.add(candidate)
                pending.discard(candidate)
                changed = True
    return found


def confirmed(shares: Iterable[Share], established: set[str]) -> set[str]:
    """The bots (full names) that an established party has reported at least one battle of: a
    newcomer only strangers ever uploaded is not among them."""
    return confirmed_of(totals(shares), established)


def confirmed_of(by_pairing: Totals, established: set[str]) -> set[str]:
    """``confirmed`` over the parties' totals."""
    t = by_pairing
    rows = np.flatnonzero(t.left_out(established)[t.uploader] & (t.battles > 0))
    pairings = np.unique(t.pairing_of(rows))
    return {t.bots[bot] for bot in np.union1d(t.a[pairings], t.b[pairings]).tolist()}
