"""Word lists and a syllable name generator for the synthetic knowledge base.

Names are built from syllables so they read like proper nouns but belong to no real entity:
a model cannot answer from pretraining memory and has to search.
"""

from __future__ import annotations

import random

__all__ = ["NameMaker", "OCCUPATIONS", "INDUSTRIES", "COMPANY_SUFFIXES", "WORK_KINDS", "WORK_NOUNS",
           "TOPICS", "REGIONS", "LANDMARKS", "with_article"]

_ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "pr", "q", "r",
           "s", "sk", "st", "t", "tr", "th", "v", "w", "z", "zh", "", "")
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ae", "ei", "ou", "y")
_CODAS = ("", "", "", "n", "r", "l", "s", "th", "nd", "rk", "m", "x", "v", "sh", "lt")
_PLACE_ENDINGS = ("ia", "ora", "and", "esh", "ovia", "ara", "uin", "ethe")
_SCHOOLS = ("University", "Institute", "College", "Polytechnic")
_CITY_ENDINGS = ("ford", "holm", "mere", "bury", "vik", "grad", "wick", "port", "dale", "stead", "", "", "")

OCCUPATIONS = ("physicist", "novelist", "architect", "engineer", "painter", "composer", "economist",
               "botanist", "historian", "cartographer", "chemist", "filmmaker", "poet", "astronomer",
               "sculptor", "mathematician", "linguist", "geologist", "violinist", "photographer")
INDUSTRIES = ("shipbuilding", "textiles", "optics", "software", "glassmaking", "railways", "publishing",
              "pharmaceuticals", "aviation", "mining", "clockmaking", "telecommunications", "brewing",
              "porcelain", "robotics", "insurance")
COMPANY_SUFFIXES = ("Industries", "Works", "Holdings", "Systems", "Foundry", "Company", "Group", "Labs")
WORK_KINDS = (("novel", "wrote", "author"), ("film", "directed", "director"), ("album", "recorded", "artist"))
WORK_NOUNS = ("Harbor", "Lanterns", "Winter", "Orchard", "Tides", "Ashes", "Compass", "Garden", "Echoes",
              "Meridian", "Station", "Letters", "Horizon", "Mirrors", "Embers", "Voyage", "Archive", "Bridges")
TOPICS = ("river trade", "glass lenses", "tidal mills", "folk songs", "star charts", "salt marshes",
          "bridge design", "paper money", "silk dyes", "weather records", "mountain passes", "clock towers",
          "grain markets", "lighthouse keepers", "copper mines", "printing presses", "ferry routes",
          "orchard blights", "canal locks", "city archives", "harbor cranes", "wool guilds")
REGIONS = ("northern", "southern", "eastern", "western", "central", "coastal", "upland", "lowland")
LANDMARKS = ("an old stone bridge", "a covered market", "a clock tower", "a botanical garden",
             "a lighthouse", "a cathedral", "a canal quarter", "a hilltop fortress", "a salt lake")


def with_article(word: str) -> str:
    """``a word`` or ``an word``, by the first letter."""
    return ("an " if word[0] in "aeiou" else "a ") + word


class NameMaker:
    """Unique proper nouns from syllables, drawn from one seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def word(self, syllables: int) -> str:
        parts = [self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) + self.rng.choice(_CODAS)
                 for _ in range(syllables)]
        return "".join(parts).capitalize()

    def unique(self, make) -> str:
        """Call ``make()`` until it gives a name not used before (names are global across kinds)."""
        for _ in range(1000):
            name = make()
            if len(name) > 3 and name.lower() not in self.used:
                self.used.add(name.lower())
                return name
        raise RuntimeError("name space exhausted")  # not reached at the supported sizes

    def country(self) -> str:
        return self.unique(lambda: self.word(self.rng.randint(1, 2)) + self.rng.choice(_PLACE_ENDINGS))

    def city(self) -> str:
        return self.unique(lambda: self.word(self.rng.randint(1, 2)) + self.rng.choice(_CITY_ENDINGS))

    def given_names(self, n: int) -> list[str]:
        return [self.unique(lambda: self.word(self.rng.randint(1, 2))) for _ in range(n)]

    def surnames(self, n: int) -> list[str]:
        return [self.unique(lambda: self.word(self.rng.randint(2, 3))) for _ in range(n)]

    def company(self) -> str:
        return self.unique(lambda: f"{self.word(self.rng.randint(2, 3))} {self.rng.choice(COMPANY_SUFFIXES)}")

    def work(self) -> str:
        return self.unique(lambda: f"{self.word(self.rng.randint(2, 3))} {self.rng.choice(WORK_NOUNS)}")

    def institute(self) -> str:
        return self.unique(lambda: f"{self.word(self.rng.randint(2, 3))} {self.rng.choice(_SCHOOLS)}")
