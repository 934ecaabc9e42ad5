"""Render the synthetic knowledge base as encyclopedia-style passages, one per entity.

Each fact has a few phrasings so the corpus is not one template; a passage names the entities
it links to (a person's birth city, a company's founder) but not their facts, so following a
link takes another search.
"""

from __future__ import annotations

import random

from agentgym.envs.searchqa._kb import City, Company, Country, KnowledgeBase, Person, University, Work
from agentgym.envs.searchqa._names import REGIONS, TOPICS, WORK_KINDS, with_article
from agentgym.envs.searchqa.data import Passage

__all__ = ["render_passages"]


def render_passages(kb: KnowledgeBase, rng: random.Random) -> tuple[list[Passage], dict[str, str]]:
    """All passages, and the passage id of each entity name."""
    groups = [(kb.countries, _country), (kb.cities, _city), (kb.universities, _university),
              (kb.persons, _person), (kb.companies, _company), (kb.works, _work)]
    passages: list[Passage] = []
    ids: dict[str, str] = {}
    for entities, render in groups:
        for name, entity in entities.items():
            pid = f"kb-{len(passages):06d}"
            sentences = render(entity, kb, rng) + [_filler(rng)]
            passages.append(Passage(pid, name, " ".join(sentences)))
            ids[name] = pid
    return passages, ids


_FILLERS = (
    "Local records from the period describe {t0} and {t1} in some detail.",
    "Historians have linked it to the {r} trade in {t0}.",
    "A small museum collection documents {t0}, {t1} and {t2}.",
    "Accounts written in the {r} provinces mention {t0} more than once.",
    "The name appears in several surveys of {t0} and of {t1}.",
)


def _filler(rng: random.Random) -> str:
    """A sentence of background that names no entity: realistic bulk and lexical noise for BM25."""
    t = rng.sample(TOPICS, 3)
    return rng.choice(_FILLERS).format(t0=t[0], t1=t[1], t2=t[2], r=rng.choice(REGIONS))


def _country(c: Country, kb: KnowledgeBase, rng: random.Random) -> list[str]:
    first = rng.choice([f"{c.name} is a sovereign state whose capital is {c.capital}.",
                        f"{c.name} is a country; its capital and seat of government is {c.capital}."])
    return [first, f"It became independent in {c.founded}.",
            f"Its economy rests on {c.industries[0]} and {c.industries[1]}."]


def _city(c: City, kb: KnowledgeBase, rng: random.Random) -> list[str]:
    where = rng.choice([f"{c.name} is a city in the {c.region} part of {c.country}.",
                        f"{c.name} is a city in {c.region} {c.country}."])
    out = [where]
    if kb.countries[c.country].capital == c.name:
        out.append(f"It is the capital of {c.country}.")
    out.append(rng.choice([f"Founded in {c.founded}, it has a population of {c.population:,}.",
                           f"The city was founded in {c.founded} and has {c.population:,} inhabitants."]))
    out.append(f"It is known for {c.landmark}.")
    return out


def _university(u: University, kb: KnowledgeBase, rng: random.Random) -> list[str]:
    return [rng.choice([f"{u.name} is a university in {u.city}, established in {u.established}.",
                        f"{u.name} is a public university located in {u.city}. "
                        f"It was established in {u.established}."]),
            f"It is known for its research on {u.topic}."]


def _person(p: Person, kb: KnowledgeBase, rng: random.Random) -> list[str]:
    out = [rng.choice([f"{p.name} (born {p.birth_year} in {p.birth_city}) is {with_article(p.occupation)}.",
                       f"{p.name} is {with_article(p.occupation)} born in {p.birth_city} in {p.birth_year}.",
                       f"{p.name} is {with_article(p.occupation)}, born in {p.birth_year} "
                       f"in the city of {p.birth_city}."])]
    out.append(rng.choice([f"{p.surname} studied at {p.university}.",
                           f"After studying at {p.university}, {p.surname} worked on {p.topics[0]}."]))
    for name in p.companies:
        out.append(f"In {kb.companies[name].founded}, {p.surname} founded {name}.")
    for title in p.works:
        work = kb.works[title]
        kind, verb, _ = WORK_KINDS[work.kind]
        out.append(f"{p.surname} {verb} the {kind} {title} ({work.year}).")
    out.append(f"{p.surname} has also written about {p.topics[1]}.")
    return out


def _company(c: Company, kb: KnowledgeBase, rng: random.Random) -> list[str]:
    return [rng.choice([f"{c.name} is {with_article(c.industry)} company headquartered in {c.city}.",
                        f"{c.name} is a company in the {c.industry} industry, based in {c.city}."]),
            rng.choice([f"It was founded in {c.founded} by {c.founder}.",
                        f"{c.founder} founded the company in {c.founded}."]),
            f"It employs about {c.employees:,} people."]


def _work(w: Work, kb: KnowledgeBase, rng: random.Random) -> list[str]:
    kind, verb, _ = WORK_KINDS[w.kind]
    return [rng.choice([f"{w.title} is a {w.year} {kind} by {w.creator}.",
                        f"{w.title} is a {kind} {verb} by {w.creator} and released in {w.year}."]),
            "It was well received on release."]
