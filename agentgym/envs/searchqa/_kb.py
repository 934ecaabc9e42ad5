"""The synthetic knowledge base: fictional countries, cities, universities, people, companies, works.

Relations link them (a person was born in a city, studied at a university, founded a company,
wrote a novel; a city lies in a country), so questions can need one hop or two. Everything is
drawn from one seeded ``random.Random``; the same size and seed give the same world everywhere.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from agentgym.envs.searchqa._names import INDUSTRIES, LANDMARKS, OCCUPATIONS, REGIONS, TOPICS, WORK_KINDS, NameMaker

__all__ = ["Country", "City", "University", "Person", "Company", "Work", "KnowledgeBase", "build_kb", "MIN_PASSAGES"]

MIN_PASSAGES = 100


@dataclass
class Country:
    name: str
    founded: int
    industries: tuple[str, str]
    capital: str = ""


@dataclass
class City:
    name: str
    country: str
    founded: int
    population: int
    region: str
    landmark: str


@dataclass
class University:
    name: str
    city: str
    established: int
    topic: str


@dataclass
class Person:
    name: str
    birth_year: int
    birth_city: str
    occupation: str
    university: str
    topics: tuple[str, str]
    companies: list[str] = field(default_factory=list)
    works: list[str] = field(default_factory=list)

    @property
    def surname(self) -> str:
        return self.name.split()[-1]


@dataclass
class Company:
    name: str
    founder: str
    founded: int
    city: str
    industry: str
    employees: int


@dataclass
class Work:
    title: str
    kind: int  # index into WORK_KINDS
    creator: str
    year: int


@dataclass
class KnowledgeBase:
    countries: dict[str, Country]
    cities: dict[str, City]
    universities: dict[str, University]
    persons: dict[str, Person]
    companies: dict[str, Company]
    works: dict[str, Work]
    _lists: dict[str, list] = field(default_factory=dict, repr=False)

    def pick(self, kind: str, rng: random.Random):
        """A random entity of ``kind`` (the name of one of the tables above)."""
        items = self._lists.get(kind)
        if items is None:
            items = self._lists[kind] = list(getattr(self, kind).values())
        return rng.choice(items)


def _counts(n: int) -> dict[str, int]:
    counts = {"countries": max(3, n // 150), "cities": max(8, n * 12 // 100), "universities": max(3, n * 4 // 100),
              "companies": max(3, n * 17 // 100), "works": max(3, n * 15 // 100)}
    counts["persons"] = n - sum(counts.values())
    return counts


def build_kb(n_passages: int, rng: random.Random) -> KnowledgeBase:
    """A knowledge base with exactly one entity per passage, ``n_passages`` in all."""
    if n_passages < MIN_PASSAGES:
        raise ValueError(f"a synthetic world needs at least {MIN_PASSAGES} passages")
    counts, names = _counts(n_passages), NameMaker(rng)
    countries = _countries(counts["countries"], names, rng)
    cities = _cities(counts["cities"], countries, names, rng)
    universities = _universities(counts["universities"], cities, names, rng)
    persons = _persons(counts["persons"], cities, universities, names, rng)
    companies = _companies(counts["companies"], persons, cities, names, rng)
    works = _works(counts["works"], persons, names, rng)
    return KnowledgeBase(countries, cities, universities, persons, companies, works)


def _countries(n: int, names: NameMaker, rng: random.Random) -> dict[str, Country]:
    out = {}
    for _ in range(n):
        name = names.country()
        out[name] = Country(name, rng.randint(1600, 1950), tuple(rng.sample(INDUSTRIES, 2)))
    return out


def _cities(n: int, countries: dict[str, Country], names: NameMaker, rng: random.Random) -> dict[str, City]:
    country_names = list(countries)
    out = {}
    for i in range(n):
        # The first cities go round-robin so every country has one; it becomes the capital.
        country = country_names[i] if i < len(country_names) else rng.choice(country_names)
        name = names.city()
        out[name] = City(name, country, rng.randint(800, 1750), rng.randint(5_000, 3_000_000),
                         rng.choice(REGIONS), rng.choice(LANDMARKS))
        if not countries[country].capital:
            countries[country].capital = name
    return out


def _universities(n: int, cities: dict[str, City], names: NameMaker, rng: random.Random) -> dict[str, University]:
    out = {}
    city_names = list(cities)
    for _ in range(n):
        # Never "University of <city>": the name would give the bridge question's answer away.
        name = names.institute()
        out[name] = University(name, rng.choice(city_names), rng.randint(1450, 1960), rng.choice(TOPICS))
    return out


def _persons(n: int, cities: dict[str, City], universities: dict[str, University], names: NameMaker,
             rng: random.Random) -> dict[str, Person]:
    given = names.given_names(max(40, int(n ** 0.5 * 3)))
    surnames = names.surnames(max(80, n // 3))
    city_names, uni_names = list(cities), list(universities)
    out: dict[str, Person] = {}
    while len(out) < n:
        name = f"{rng.choice(given)} {rng.choice(surnames)}"
        if name not in out:
            out[name] = Person(name, rng.randint(1780, 1990), rng.choice(city_names), rng.choice(OCCUPATIONS),
                               rng.choice(uni_names), tuple(rng.sample(TOPICS, 2)))
    return out


def _companies(n: int, persons: dict[str, Person], cities: dict[str, City], names: NameMaker,
               rng: random.Random) -> dict[str, Company]:
    person_names, city_names = list(persons), list(cities)
    out = {}
    for _ in range(n):
        founder = persons[rng.choice(person_names)]
        name = names.company()
        out[name] = Company(name, founder.name, _later(founder.birth_year, 22, 60, rng), rng.choice(city_names),
                            rng.choice(INDUSTRIES), rng.randint(12, 90_000))
        founder.companies.append(name)
    return out


def _works(n: int, persons: dict[str, Person], names: NameMaker, rng: random.Random) -> dict[str, Work]:
    person_names = list(persons)
    out = {}
    for _ in range(n):
        creator = persons[rng.choice(person_names)]
        title = names.work()
        out[title] = Work(title, rng.randrange(len(WORK_KINDS)), creator.name, _later(creator.birth_year, 18, 75, rng))
        creator.works.append(title)
    return out


def _later(year: int, low: int, high: int, rng: random.Random) -> int:
    """A year ``low``..``high`` years after ``year`` and no later than 2024."""
    return year + rng.randint(low, max(low, min(high, 2024 - year)))
