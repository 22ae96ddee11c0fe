"""Deterministic synthetic palaces for the speed suite (``bench/speed.py``).

Every memory is 10-80 words of topic words drawn from a Zipf distribution
(a realistic long tail for BM25), with people, projects and systems named in
them, 0-3 tags, one of eight agents, a visibility (isolated, shared, group)
and, for a quarter of them, a conversation session of 10-40 turns. The same
seed always gives the same corpus, and the same queries.

Palaces are built once per size and embedder and cached under
``bench/.cache/speed/`` (gitignored): building needs every text embedded.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = ["AGENTS", "Query", "Record", "agent_groups", "queries", "records"]

SEED = 20261123
AGENTS = tuple(f"agent-{i}" for i in range(8))
GROUPS = ("team-red", "team-blue")
START = datetime(2025, 1, 1, tzinfo=timezone.utc)

FIRST = (
    "Alice Bruno Chen Dana Elif Farid Greta Hiro Ines Jonas Kemal Lena Marco Nadia Omar Priya"
    " Quinn Rosa Sven Tariq Uma Viktor Wendy Ximena Yusuf Zara Amara Bashir Carmen Dmitri Emeka"
    " Fatima Gustavo Hana Igor Julia Kofi Leila Mateo Noor Olga Pedro Rania Sakura Tomas Valeria"
).split()
LAST = (
    "Moreno Schmidt Okafor Tanaka Rossi Novak Haddad Larsen Kowalski Silva Dubois Mensah"
    " Petrov Nguyen Fischer Costa Yilmaz Jensen Ibrahim Varga"
).split()
PROJECTS = (
    "Falcon Atlas Harbor Juniper Meridian Nimbus Orchid Pioneer Quartz Redwood Sierra Tundra"
    " Umbra Vesper Willow Zephyr Beacon Cobalt Delta Ember Fjord Granite Helix Iris Kestrel"
    " Lumen Mosaic Nova Onyx Prism"
).split()
SYSTEMS = (
    "Kafka Postgres SQLite Redis Kubernetes Terraform Grafana Jenkins Airflow Spark Nginx"
    " Elasticsearch RabbitMQ Snowflake Vault Docker"
).split()
TAGS = (
    "ops infra release billing security oncall design research hiring budget customer"
    " incident roadmap data ml frontend backend mobile legal support travel health family"
    " cooking music reading fitness garden finance planning review"
).split()
WORDS = (
    "deploy release cluster storage latency index vector search customer invoice schedule"
    " backup migration token budget context prompt skill memory agent recall decision lesson"
    " meeting tuesday review design api service queue cache database schema query table"
    " rollback incident alert pager dashboard metric threshold report quarter revenue cost"
    " contract vendor license audit policy access role permission password rotation key"
    " certificate domain network firewall region zone replica shard partition throughput"
    " timeout retry error warning failure outage postmortem root cause fix patch version"
    " upgrade dependency library framework test coverage build pipeline artifact container"
    " image registry secret config flag experiment rollout canary traffic load balancer"
    " request response payload format json schema field column migration script job cron"
    " nightly weekly monthly daily morning evening weekend holiday trip flight hotel visa"
    " passport dinner lunch coffee tea birthday wedding concert movie book novel painting"
    " garden plant tomato bread recipe oven bike run marathon swim yoga doctor appointment"
    " dentist school teacher class homework exam grade sister brother mother father friend"
    " neighbour dog cat puppy kitten vet walk park beach mountain lake river camping hike"
    " photo camera guitar piano song album band festival museum gallery theatre ticket"
    " price discount order delivery package refund support ticket complaint feedback survey"
    " interview candidate offer salary promotion manager team standup retro sprint backlog"
    " story estimate deadline milestone launch demo slide presentation document draft"
    " proposal approval sign off blocker risk mitigation plan goal objective result"
    " strategy market competitor pricing segment churn retention growth funnel campaign"
    " email newsletter blog post tweet video podcast interview article research paper"
    " dataset model training evaluation accuracy benchmark baseline ablation feature"
    " embedding transformer tokenizer gradient loss epoch batch learning rate optimizer"
    " laptop phone monitor keyboard charger battery screen update install crash bug"
    " issue pull request merge branch commit tag changelog readme wiki onboarding"
    " handbook guideline checklist runbook procedure workflow process step owner"
    " decided agreed chose rejected postponed cancelled moved renamed replaced fixed"
    " broke improved reduced increased measured tested shipped planned discussed asked"
    " answered promised remembered forgot learned noticed found lost bought sold paid"
    " because although after before during since until while whenever therefore"
    " quickly slowly carefully finally again still already never always often"
    " new old big small fast slow cheap expensive easy hard early late important urgent"
).split()
FILLER = "the a of to and in for with on at by from that this it was is we they our".split()
_SYLLABLES = "ka lo mi ru te sa vo ni pe zu ra ko li da mo fe gi bu ta ne".split()


@dataclass(frozen=True, slots=True)
class Record:
    """One memory to write: its agent and ``remember`` arguments."""

    agent: str
    fields: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Query:
    """One recall: the agent asking and the text."""

    agent: str
    text: str


def agent_groups(agent: str) -> tuple[str, ...]:
    """The group an agent belongs to (agents alternate between two)."""
    return (GROUPS[int(agent.rsplit("-", 1)[1]) % 2],)


def _vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    """Topic words first, then rare made-up words; Zipf weights (s = 1.1, offset 60)."""
    rare = sorted(
        {"".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(4000)}
    )
    rng.shuffle(rare)
    words = list(dict.fromkeys(WORDS)) + rare
    # The offset flattens the head: the commonest topic word is in about 8%
    # of memories, as common content words are in real notes.
    weights = [1.0 / (rank + 60) ** 1.1 for rank in range(len(words))]
    return words, weights


class _Writer:
    """Sentences of Zipf words with named things in them."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.words, weights = _vocabulary(rng)
        total = 0.0
        self.cumulative = []
        for w in weights:
            total += w
            self.cumulative.append(total)
        self.people = [f"{f} {last}" for f in FIRST for last in LAST]

    def entity(self) -> str:
        roll = self.rng.random()
        if roll < 0.5:
            person = self.rng.choice(self.people)
            return person if self.rng.random() < 0.3 else person.split()[0]
        if roll < 0.8:
            return f"Project {self.rng.choice(PROJECTS)}"
        return self.rng.choice(SYSTEMS)

    def text(self, count: int) -> str:
        rng = self.rng
        # A third of the words are fillers ("the", "of"), as in prose.
        picked = rng.choices(self.words, cum_weights=self.cumulative, k=count - count // 3)
        out: list[str] = []
        for i, word in enumerate(picked):
            if i % 2 == 1:
                out.append(rng.choice(FILLER))
            out.append(word)
        # One to three named things, at random places.
        for _ in range(rng.randint(1, 3) if count > 15 else 1):
            out.insert(rng.randrange(1, len(out)), self.entity())
        sentences: list[str] = []
        at = 0
        while at < len(out):
            step = rng.randint(7, 16)
            chunk = out[at : at + step]
            sentences.append(chunk[0][:1].upper() + " ".join(chunk)[1:] + ".")
            at += step
        return " ".join(sentences)


def _length(rng: random.Random) -> int:
    """10-80 words, most of them short (median about 30)."""
    return max(10, min(80, int(rng.lognormvariate(3.35, 0.5))))


def records(count: int, *, seed: int = SEED) -> Iterator[Record]:
    """``count`` memories, in write order."""
    rng = random.Random(seed)
    writer = _Writer(rng)
    categories = ("fact", "decision", "lesson", "event", "rule", "goal", "workflow", "person")
    made = 0
    session_no = 0
    while made < count:
        when = START + timedelta(seconds=int(made * 600 + rng.random() * 300))
        agent = rng.choice(AGENTS)
        if rng.random() < 0.013:  # a conversation session of 10-40 turns (a quarter of all)
            session_no += 1
            speakers = [rng.choice(FIRST), rng.choice(FIRST)]
            visibility = "shared" if rng.random() < 0.3 else "isolated"
            turns = min(rng.randint(10, 40), count - made)
            for turn in range(turns):
                speaker = speakers[turn % 2]
                body = writer.text(_length(rng) - 1)
                yield Record(
                    agent,
                    {
                        "content": f"{speaker}: {body}",
                        "session": f"session-{session_no}",
                        "category": "conversation",
                        "store": "episodic",
                        "visibility": visibility,
                        "created_at": (when + timedelta(seconds=30 * turn)).isoformat(),
                    },
                )
            made += turns
            continue
        roll = rng.random()
        visibility = "isolated" if roll < 0.6 else "shared" if roll < 0.9 else "group"
        fields: dict[str, Any] = {
            "content": writer.text(_length(rng)),
            "category": rng.choice(categories),
            "tags": rng.sample(TAGS, rng.randint(0, 3)),
            "visibility": visibility,
            "created_at": when.isoformat(),
        }
        if visibility == "group":
            fields["group"] = agent_groups(agent)[0]
        yield Record(agent, fields)
        made += 1


def queries(count: int, corpus_size: int, *, seed: int = SEED + 1) -> list[Query]:
    """``count`` recall queries: a few words and a name, as an agent would ask."""
    rng = random.Random(seed)
    writer = _Writer(random.Random(SEED))  # same vocabulary as the corpus
    out: list[Query] = []
    starts = ("what did we decide about", "notes on", "why", "how do we handle", "")
    for _ in range(count):
        words = rng.choices(writer.words[:400], cum_weights=writer.cumulative[:400], k=3)
        name = writer.entity() if rng.random() < 0.7 else ""
        text = " ".join(p for p in (rng.choice(starts), name, *words) if p)
        out.append(Query(rng.choice(AGENTS), text))
    del corpus_size
    return out
