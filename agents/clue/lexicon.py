"""A small common-sense lexicon, and how the offline responder reads text with it.

The heuristic responder (:mod:`agents.clue.heuristic`) must understand two kinds of
text the way a language model would, without one: the task ("Locate the barrel with the
hazardous content", "something to haul my gear, ideally with room for a laptop") and a
VLM's answer about what the camera sees ("At the target I see a green tarp draped over a
drum ..."). This module holds the words it needs and the few text operations built on
them:

* :data:`OBJECTS` - kinds of things, each with the words that name the same kind
  (``barrel``: barrel, drum, keg, cask); :data:`BROADER` - more general concepts to fall
  back on when a map query finds nothing (``backpack`` -> ``bag``);
* :data:`FUNCTIONS` - what people want done -> the kinds of things that do it
  (transport -> cart, trolley, wagon ...);
* :data:`EVIDENCE` - properties a task can ask for and the words that confirm or deny
  them (hazard: danger, corrosive, toxic ... versus water, empty, safe);
* :func:`parse_task` -> :class:`Intent` (goal kinds, map concepts to try in order, the
  requirements an inspection must confirm), and :func:`scan_cues`, a negation-aware cue
  finder ("no raised surface", "nothing to rest a laptop on" deny what they name).

Everything here is generic English; nothing is tuned to a particular scenario.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


def _w(text: str) -> tuple[str, ...]:
    """Comma-separated words or phrases as a tuple (keeps the word lists compact)."""
    return tuple(p.strip() for p in text.split(",") if p.strip())


# --------------------------------------------------------------------------- words

OBJECTS: dict[str, tuple[str, ...]] = {
    # containers
    "barrel": ("barrel", "drum", "keg", "cask", "oil drum"),
    "bin": _w(
        "bin, trash bin, trash can, garbage can, garbage bin, waste bin, wastebasket, dustbin, "
        "rubbish bin, recycling bin, litter bin, dumpster"
    ),
    "bucket": ("bucket", "pail"),
    "canister": ("canister", "jerrycan", "jerry can", "gas can", "fuel can"),
    "gas cylinder": ("gas cylinder", "gas bottle", "cylinder"),
    "container": ("container", "tub", "storage tub"),
    "box": ("box", "carton", "cardboard box", "packing box", "moving box", "package", "parcel"),
    "crate": ("crate", "milk crate", "tote box"),
    "basket": ("basket", "hamper"),
    "tank": ("tank", "water tank"),
    # wheeled transport
    "cart": _w(
        "cart, trolley, wagon, dolly, hand truck, handcart, hand cart, pushcart, platform truck, "
        "utility cart, service cart"
    ),
    "wheelbarrow": ("wheelbarrow", "barrow"),
    "bicycle": ("bicycle", "bike"),
    "scooter": ("scooter",),
    # bags and luggage
    "backpack": ("backpack", "rucksack", "knapsack", "daypack", "bookbag", "school bag"),
    "bag": _w(
        "bag, duffel, duffel bag, duffle, duffle bag, tote, tote bag, sack, satchel, handbag, "
        "purse, holdall, shopping bag, messenger bag, gym bag"
    ),
    "suitcase": ("suitcase", "luggage", "carry on"),
    # furniture
    "table": ("table", "work table", "worktable", "side table", "coffee table", "dining table"),
    "desk": ("desk", "writing desk", "office desk", "standing desk"),
    "workbench": ("workbench", "work bench"),
    "bench": ("bench",),
    "chair": ("chair", "armchair", "office chair", "folding chair", "seat"),
    "stool": ("stool", "step stool", "bar stool"),
    "sofa": ("sofa", "couch", "settee"),
    "bed": ("bed", "cot"),
    "shelf": _w("shelf, shelving, bookshelf, bookcase, rack, storage rack, shelving unit"),
    "cabinet": ("cabinet", "cupboard", "filing cabinet", "locker", "wardrobe", "closet"),
    "drawer": ("drawer",),
    "counter": ("counter", "countertop"),
    # signs and markings (they carry information about other things)
    "sign": ("sign", "signboard", "placard", "notice", "poster", "warning sign"),
    "label": ("label", "sticker", "tag", "decal"),
    # tools and equipment
    "toolbox": ("toolbox", "tool box", "tool chest", "tool case", "toolkit", "tool kit"),
    "tool": ("tool", "wrench", "spanner", "hammer", "screwdriver", "pliers", "drill"),
    "ladder": ("ladder", "stepladder", "step ladder"),
    "fire extinguisher": ("fire extinguisher", "extinguisher"),
    "helmet": ("helmet", "hard hat", "hardhat"),
    "cone": ("cone", "traffic cone", "safety cone"),
    "hose": ("hose", "garden hose"),
    "rope": ("rope", "cord"),
    "pallet": ("pallet", "skid"),
    "generator": ("generator",),
    "broom": ("broom",),
    "mop": ("mop",),
    "vacuum": ("vacuum", "vacuum cleaner", "hoover"),
    "flashlight": ("flashlight", "torch", "lantern"),
    "lamp": ("lamp", "desk lamp", "floor lamp"),
    "umbrella": ("umbrella",),
    "scissors": ("scissors", "shears"),
    "knife": ("knife", "box cutter", "utility knife"),
    "saw": ("saw", "handsaw"),
    "watering can": ("watering can",),
    # electronics
    "laptop": ("laptop", "notebook computer", "computer"),
    "monitor": ("monitor", "screen", "display"),
    "keyboard": ("keyboard",),
    "phone": ("phone", "smartphone", "cellphone", "mobile phone"),
    "tablet": ("tablet", "ipad"),
    "printer": ("printer",),
    "camera": ("camera",),
    "robot": ("robot",),
    "drone": ("drone",),
    # household things
    "vase": ("vase", "urn"),
    "plant": ("plant", "potted plant", "houseplant", "fern", "succulent", "cactus", "flower"),
    "bottle": ("bottle", "flask", "water bottle"),
    "cup": ("cup", "mug", "tumbler"),
    "bowl": ("bowl",),
    "plate": ("plate", "dish"),
    "book": ("book", "notebook", "binder"),
    "folder": ("folder",),
    "paper": ("paper", "newspaper", "document"),
    "clock": ("clock",),
    "mirror": ("mirror",),
    "towel": ("towel",),
    "pillow": ("pillow", "cushion"),
    "rug": ("rug", "carpet", "mat"),
    "jacket": ("jacket", "coat"),
    "shoe": ("shoe", "boot", "sneaker"),
    "hat": ("hat", "cap"),
    "tire": ("tire", "tyre"),
    "door": ("door",),
    "window": ("window",),
    "person": ("person", "man", "woman", "people"),
    "dog": ("dog",),
    "cat": ("cat",),
    # coverings (things that hide other things)
    "tarp": ("tarp", "tarpaulin", "plastic sheet", "drop cloth"),
    "sheet": ("sheet", "bedsheet"),
    "blanket": ("blanket",),
    "cloth": ("cloth", "rag", "fabric"),
    "cover": ("cover", "dust cover", "covering"),
    "lid": ("lid",),
}
"""Canonical concept -> words that name the same kind of thing (singular, lower case)."""

BROADER: dict[str, tuple[str, ...]] = {
    "barrel": ("container",),
    "bin": ("container",),
    "bucket": ("container",),
    "canister": ("container",),
    "crate": ("box", "container"),
    "box": ("container",),
    "basket": ("container",),
    "backpack": ("bag",),
    "suitcase": ("bag",),
    "desk": ("table",),
    "workbench": ("table",),
    "stool": ("chair",),
    "bench": ("chair",),
    "sofa": ("chair",),
    "cabinet": ("shelf",),
    "drawer": ("cabinet",),
    "toolbox": ("box",),
    "laptop": ("computer",),
    "vase": ("pot",),
    "cup": ("container",),
    "bottle": ("container",),
    "watering can": ("can",),
    "flashlight": ("lamp",),
}
"""Concept -> more general concepts, most specific first (map-query fallbacks)."""


def narrower(concept: str) -> tuple[str, ...]:
    """Concepts that are kinds of ``concept`` (transitively through :data:`BROADER`)."""
    out: list[str] = []
    frontier = [concept]
    while frontier:
        parent = frontier.pop(0)
        for child, parents in BROADER.items():
            if parent in parents and child not in out and child != concept:
                out.append(child)
                frontier.append(child)
    return tuple(out)


QUERY_ALTERNATIVES: dict[str, tuple[str, ...]] = {
    "barrel": ("drum",),
    "cart": ("trolley", "wagon", "wheeled cart"),
    "bin": ("trash can",),
    "backpack": ("rucksack",),
    "chair": ("seat",),
    "shelf": ("rack",),
    "cabinet": ("cupboard",),
    "sofa": ("couch",),
    "plant": ("potted plant",),
}
"""Concept -> other names worth asking the map for before broadening."""

OCCLUDERS = ("tarp", "sheet", "blanket", "cloth", "cover", "towel", "lid")
"""Concepts of things that cover other things, the usual one first."""

WEAK_OCCLUDERS = ("lid",)
"""Coverings that are part of the thing itself: deal with them only when nothing else is left."""

CARRIERS = ("sign", "label")
"""Concepts that carry information about the thing they are on."""

CARRIER_WORDS = _w(
    "label, sign, sticker, tag, placard, logo, patch, marking, notice, decal, emblem, writing, "
    "text, print, stencil, plate"
)
"""Words that mark a sentence of a VLM answer as reading what is written on something."""

SURFACE_KINDS = ("table", "desk", "workbench", "bench", "shelf", "counter", "cabinet")
WHEELED_KINDS = ("cart", "wheelbarrow", "bicycle", "scooter", "suitcase")

COLOURS: dict[str, tuple[str, ...]] = {
    "red": ("red", "crimson", "scarlet", "maroon", "burgundy"),
    "orange": ("orange",),
    "yellow": ("yellow", "gold", "golden", "amber"),
    "green": ("green", "olive", "lime", "khaki"),
    "blue": ("blue", "navy", "azure", "cobalt", "teal", "turquoise", "cyan"),
    "purple": ("purple", "violet", "lilac", "magenta"),
    "pink": ("pink",),
    "black": ("black",),
    "white": ("white", "ivory", "cream"),
    "grey": ("grey", "gray", "silver", "charcoal"),
    "brown": ("brown", "tan", "beige", "wooden", "chestnut"),
}
"""Colour family -> the words that name it."""

NEGATORS = frozenset(
    "no not non without nothing never none neither nor lacks lacking lack missing "
    "isn't aren't doesn't don't didn't hasn't haven't can't cannot couldn't wasn't".split()
)
NEGATION_WINDOW = 5  # a negator denies cues at most this many words after it, same clause

SOFT_MARKERS = _w(
    "ideally, preferably, if possible, would be nice, nice to have, bonus, optionally, if you can, "
    "even better, would be great, would help, better if, if there is one, maybe"
)
"""Words that make the requirements of their sentence wishes rather than conditions."""

OUTDOOR_WORDS = ("outside", "outdoor", "outdoors", "field", "yard", "garden", "terrain", "site")

EMPTY_VIEW = _w(
    "cannot make out, can't make out, cannot see any, no object, only floor, only the floor, "
    "nothing at the target, nothing there, empty floor"
)
"""Phrases with which a VLM says the target shows nothing."""

# --------------------------------------------------------------------------- evidence


@dataclass(frozen=True)
class EvidenceClass:
    """A property a task may ask for, and how an inspection answer confirms or denies it."""

    name: str
    triggers: tuple[str, ...]  # task words that ask for this property
    positive: tuple[str, ...]  # answer words that confirm it
    counter: tuple[str, ...]  # answer words that speak against it
    question: str  # what to ask the VLM
    claim: str  # how the goal states it


EVIDENCE: dict[str, EvidenceClass] = {
    "hazard": EvidenceClass(
        name="hazard",
        triggers=_w(
            "hazard, hazardous, dangerous, danger, toxic, poison, poisonous, harmful, corrosive, "
            "flammable, inflammable, chemical, unsafe, caustic, explosive, radioactive, hazmat, "
            "biohazard, acid, deadly"
        ),
        positive=_w(
            "danger, dangerous, hazard, hazardous, corrosive, toxic, flammable, inflammable, "
            "chemical, poison, poisonous, acid, caustic, biohazard, explosive, radioactive, "
            "warning, hydroxide, bleach, solvent, fuel, gasoline, petrol, oxidizer, oxidiser, "
            "irritant, harmful, skull, hazmat, lethal, deadly"
        ),
        counter=_w(
            "water, empty, safe, harmless, food, drinking, rinsing, inert, edible, potable, sand, "
            "paper, trash, rubbish, garbage, recycling"
        ),
        question="What does any label or sign on it say about its contents or hazards?",
        claim="with hazardous contents",
    ),
    "surface": EvidenceClass(
        name="surface",
        triggers=_w(
            "perch, surface, tabletop, ledge, on top, flat, worktop, tray, put my laptop, rest my, "
            "laptop, place my laptop, set my laptop"
        ),
        positive=_w(
            "flat, shelf, surface, top, tray, tier, tabletop, laptop, ledge, worktop, desk, deck"
        ),
        counter=("sloped", "slanted", "uneven", "cluttered", "curved"),
        question="Does it have a flat, clear top or shelf that could hold a laptop?",
        claim="with a flat surface that can hold a laptop",
    ),
    "wheels": EvidenceClass(
        name="wheels",
        triggers=_w(
            "wheel, wheels, wheeled, roll, rolls, rolling, rollable, caster, casters, castor, "
            "castors"
        ),
        positive=("wheel", "wheeled", "caster", "castor", "roll", "rolling", "rollable"),
        counter=("stationary", "bolted", "fixed"),
        question="Does it have wheels?",
        claim="on wheels",
    ),
}

SURFACE_COMPLEMENTS = ("laptop", "monitor", "tablet", "keyboard")
"""Things a task may want to rest on the goal object: they ask for the surface class."""

BRAND_MARKERS = _w("logo, brand, branded, branding, emblem, trademark, made by, manufacturer")

READ_MARKERS = ("reads", "says", "written", "printed", "reading", "saying", "states")

CONTENT_WORDS = _w(
    "water, oil, sand, paint, fuel, gasoline, diesel, beer, wine, juice, milk, coffee, trash, "
    "garbage, tools, books, clothes, food, soil, gravel, cables, toys, documents, ice"
)
"""Contents a task may name ("the barrel with water"); an inspection must see them."""

# --------------------------------------------------------------------------- functions


def _forms(*verbs: str) -> tuple[str, ...]:
    """Every verb with its -s, -ed and -ing forms (regular English)."""
    out: list[str] = []
    for v in verbs:
        if v.endswith("y") and v[-2:-1] not in "aeiou":
            forms = (v, v[:-1] + "ies", v[:-1] + "ied", v + "ing")
        elif v.endswith("e"):
            forms = (v, v + "s", v + "d", v[:-1] + "ing")
        else:
            short = len(v) <= 4 and re.fullmatch(r".*[^aeiou][aeiou][bdgmnpt]", v)
            double = v + v[-1] if short else v
            forms = (
                v,
                v + ("es" if v.endswith(("s", "sh", "ch", "x")) else "s"),
                double + "ed",
                double + "ing",
            )
        out.extend(forms)
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class Function:
    """Something a person wants done, and the kinds of things that do it (best first)."""

    name: str
    triggers: tuple[str, ...]
    concepts: tuple[str, ...]
    purpose: str


FUNCTIONS: tuple[Function, ...] = (
    Function(
        "transport",
        _forms("transport", "carry", "haul", "move", "ferry", "lug", "shift")
        + ("take equipment", "bring equipment", "heavy load", "heavy loads"),
        ("cart", "trolley", "wagon", "dolly", "hand truck", "wheelbarrow"),
        "to transport things",
    ),
    Function(
        "sit",
        _forms("sit") + ("sat", "take a seat", "rest my legs", "somewhere to rest", "seating"),
        ("chair", "stool", "bench", "sofa"),
        "to sit on",
    ),
    Function(
        "dispose",
        _forms("dispose", "discard")
        + ("throw away", "throw out", "get rid of", "rubbish", "garbage", "trash", "litter"),
        ("bin", "trash can", "dumpster"),
        "to throw things away",
    ),
    Function(
        "store",
        _forms("store", "stow", "organise", "organize", "shelve") + ("put away", "storage"),
        ("shelf", "cabinet", "box", "crate"),
        "to store things",
    ),
    Function(
        "water",
        _w(
            "water the plant, water the plants, water my plant, water my plants, water plants, "
            "watering, water the flowers, water the garden"
        ),
        ("watering can", "bucket", "hose"),
        "to water plants",
    ),
    Function(
        "climb",
        _forms("climb", "reach") + ("high shelf", "top shelf", "get up to", "step on"),
        ("ladder", "step stool", "stool", "chair"),
        "to reach high places",
    ),
    Function(
        "work",
        _forms("write", "study")
        + _w(
            "work on, work at, use my laptop, set up my laptop, put my laptop, place to work, "
            "somewhere to work"
        ),
        ("desk", "table", "workbench"),
        "to work at",
    ),
    Function(
        "light",
        _forms("illuminate") + ("light up", "in the dark", "too dark", "see better"),
        ("flashlight", "lamp"),
        "to give light",
    ),
    Function(
        "fire",
        _forms("extinguish") + ("put out the fire", "put out a fire", "fire", "blaze", "flames"),
        ("fire extinguisher",),
        "to fight a fire",
    ),
    Function(
        "cut",
        _forms("cut", "trim", "slice", "snip"),
        ("scissors", "knife", "saw"),
        "to cut things",
    ),
    Function(
        "drink",
        _forms("drink") + ("thirsty", "beverage", "some coffee", "some tea"),
        ("cup", "mug", "bottle"),
        "to drink from",
    ),
    Function(
        "repair",
        _forms("fix", "repair", "tighten", "loosen", "assemble"),
        ("toolbox", "tool"),
        "to repair things",
    ),
    Function(
        "rain",
        ("rain", "raining", "rainy", "drizzle", "stay dry", "keep dry"),
        ("umbrella",),
        "to keep dry",
    ),
    Function(
        "protect_head",
        ("protect my head", "head protection", "hard hat", "safety helmet"),
        ("helmet",),
        "to protect the head",
    ),
    Function(
        "clean",
        _forms("clean", "sweep", "mop", "wipe") + ("spill", "spilled", "spilt", "mess", "dust"),
        ("broom", "mop", "vacuum", "cloth"),
        "to clean up",
    ),
    Function(
        "sleep",
        _forms("sleep", "nap") + ("lie down", "take a nap"),
        ("bed", "sofa", "bench"),
        "to lie down on",
    ),
    Function(
        "pack",
        _forms("pack") + ("carry my books", "carry my things", "put my things in"),
        ("backpack", "bag", "box", "basket"),
        "to pack things in",
    ),
)

# --------------------------------------------------------------------------- text helpers

_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
_CLAUSE_SPLIT_RE = re.compile(r"[.;:!?,()\[\]\"]+|\s-\s|\s\u2014\s|\bbut\b|\bwhile\b", re.I)
_IRREGULAR = {
    "shelves": "shelf",
    "knives": "knife",
    "people": "person",
    "men": "man",
    "women": "woman",
    "leaves": "leaf",
    "wolves": "wolf",
    "halves": "half",
    "feet": "foot",
    "mice": "mouse",
    "children": "child",
    "scissors": "scissors",
    "pliers": "pliers",
    "clothes": "clothes",
    "shears": "shears",
    "glasses": "glasses",
    "series": "series",
}
_NO_SINGULAR_ENDINGS = ("ss", "us", "is", "ous", "ics")


def normalise_text(text: str) -> str:
    """Typographic quotes and dashes replaced by their ASCII forms."""
    return (
        text.replace("\u2019", "'")
        .replace("\u2018", "'")
        .replace("\u201c", '"')
        .replace("\u201d", '"')
        .replace("\u2013", "-")
    )


def singular(word: str) -> str:
    """English singular of a lower-case word (rule of thumb; unknown words pass through)."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or word.endswith(_NO_SINGULAR_ENDINGS):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Lower-case word tokens; hyphens and punctuation separate words."""
    return [w.lower() for w in _WORD_RE.findall(normalise_text(text))]


def norm_words(text: str) -> list[str]:
    """:func:`words` in singular form."""
    return [singular(w) for w in words(text)]


def phrase_tokens(phrase: str) -> tuple[str, ...]:
    return tuple(norm_words(phrase))


def find_phrase(tokens: list[str], phrase: str, start: int = 0) -> int:
    """Index of the first occurrence of ``phrase`` (normalised) in ``tokens``, or -1."""
    p = phrase_tokens(phrase)
    if not p:
        return -1
    for i in range(start, len(tokens) - len(p) + 1):
        if tuple(tokens[i : i + len(p)]) == p:
            return i
    return -1


def contains_any(text: str, phrases: tuple[str, ...] | list[str]) -> bool:
    toks = norm_words(text)
    return any(find_phrase(toks, p) >= 0 for p in phrases)


def clauses(text: str) -> list[str]:
    """``text`` cut at punctuation, dashes and 'but' / 'while': the scope of a negation."""
    return [c for c in _CLAUSE_SPLIT_RE.split(normalise_text(text)) if c.strip()]


@dataclass(frozen=True)
class CueHit:
    cue: str
    negated: bool
    clause: str


def scan_cues(text: str, cues: tuple[str, ...] | list[str]) -> list[CueHit]:
    """Every occurrence of a cue phrase in ``text``, with whether a negator precedes it.

    A negator (no, not, non, without, nothing, ...) denies the cues that follow it within
    :data:`NEGATION_WINDOW` words of the same clause: "no raised surface" denies
    "surface"; "non-hazardous" denies "hazardous"; "nothing to rest a laptop on" denies
    "laptop".
    """
    hits: list[CueHit] = []
    patterns = sorted({phrase_tokens(c) for c in cues if phrase_tokens(c)}, key=lambda p: -len(p))
    for clause in clauses(text):
        toks = norm_words(clause)
        used = [False] * len(toks)
        found: list[tuple[int, str]] = []
        for p in patterns:
            n = len(p)
            for i in range(len(toks) - n + 1):
                if tuple(toks[i : i + n]) == p and not any(used[i : i + n]):
                    for k in range(i, i + n):
                        used[k] = True
                    found.append((i, " ".join(p)))
        for i, cue in sorted(found):
            window = toks[max(0, i - NEGATION_WINDOW) : i]
            hits.append(CueHit(cue, any(w in NEGATORS for w in window), clause.strip()))
    return hits


@dataclass(frozen=True)
class NounHit:
    """A lexicon noun found in text: where, the words used and its canonical concept."""

    index: int  # token index of the first word
    length: int  # tokens
    phrase: str
    concept: str


def _noun_patterns() -> list[tuple[tuple[str, ...], str]]:
    pats: dict[tuple[str, ...], str] = {}
    for concept, names in OBJECTS.items():
        for name in (concept, *names):
            pats.setdefault(phrase_tokens(name), concept)
    return sorted(pats.items(), key=lambda kv: (-len(kv[0]), kv[0]))


_NOUN_PATTERNS = _noun_patterns()


def find_nouns(tokens: list[str]) -> list[NounHit]:
    """Lexicon nouns in normalised ``tokens``, longest phrases first, without overlap."""
    used = [False] * len(tokens)
    hits: list[NounHit] = []
    for pat, concept in _NOUN_PATTERNS:
        n = len(pat)
        for i in range(len(tokens) - n + 1):
            if tuple(tokens[i : i + n]) == pat and not any(used[i : i + n]):
                for k in range(i, i + n):
                    used[k] = True
                hits.append(NounHit(i, n, " ".join(pat), concept))
    return sorted(hits, key=lambda h: h.index)


def concept_of(word: str) -> str | None:
    """The canonical concept a word or phrase names, if the lexicon knows it."""
    toks = phrase_tokens(word)
    for pat, concept in _NOUN_PATTERNS:
        if pat == toks:
            return concept
    return None


def colour_family(word: str) -> str | None:
    w = word.lower()
    for family, names in COLOURS.items():
        if w in names:
            return family
    return None


# --------------------------------------------------------------------------- task intent


@dataclass(frozen=True)
class Requirement:
    """A condition an inspection answer must meet for a candidate to satisfy the task.

    ``kind``: ``evidence`` (an :class:`EvidenceClass` by ``name``), ``brand``, ``colour``,
    ``text`` (words written on it), ``content`` (a named thing or material on or in it).
    ``soft``: a wish ("ideally ..."): failing it does not rule a candidate out.
    ``implied``: the goal kind usually has it (a cart has wheels): only a denial counts.
    """

    kind: str
    name: str
    label: str
    positive: tuple[str, ...]
    counter: tuple[str, ...] = ()
    question: str = ""
    soft: bool = False
    implied: bool = False


@dataclass(frozen=True)
class Intent:
    """What the task asks for, as the responder understands it."""

    task: str
    head: str  # the word the task uses for the goal ("drum"), or the function's first concept
    kinds: tuple[str, ...]  # canonical concepts that satisfy the goal
    function: str | None  # FUNCTIONS name when the goal was inferred from a purpose
    purpose: str  # "to transport things", "" for a named object
    requirements: tuple[Requirement, ...]
    queries: tuple[str, ...]  # map concepts to try, in order (precise -> broad)
    outdoor: bool = False
    identity: tuple[str, ...] = field(default=())  # words that name a goal kind
    related: tuple[str, ...] = field(default=())  # broader words ("bag" for a backpack)

    @property
    def hard(self) -> tuple[Requirement, ...]:
        return tuple(r for r in self.requirements if not r.soft)

    def goal_text(self, *, short: bool = False) -> str:
        """The goal in words, e.g. 'the barrel with hazardous contents'; ``short`` leaves
        out the kinds a purpose suggests."""
        labels = [r.label for r in self.requirements if not r.implied]
        pre = [r.label for r in self.requirements if r.kind in ("brand", "colour")]
        post = [lab for lab in labels if lab not in pre]
        noun = " ".join([*pre, self.head])
        if self.function and short:
            core = f"something {self.purpose}"
        elif self.function:
            alts = ", ".join(q for q in self.queries[:4] if q != self.head)
            core = f"something {self.purpose} (a {self.head} or similar: {alts})"
        else:
            core = f"the {noun}"
        if post:
            core += " " + " and ".join(post)
        return core

    def question(self) -> str:
        """The VLM question for an inspection of a candidate."""
        if self.function:
            first = f"What is this, and could it serve {self.purpose}?"
        else:
            first = f"What is this; is it a {self.head}?"
        parts = [first] + [r.question for r in self.requirements if r.question]
        parts.append("Is it covered by anything?")
        return " ".join(dict.fromkeys(parts))


_DETERMINERS = frozenset(
    "the a an my your his her our their its this that these those some any one another "
    "me us him them i you we it".split()
)
_ADJECTIVES = frozenset(
    "big small large little old new heavy light empty full tall short long wide narrow "
    "round square flat plastic metal wooden steel cardboard leather dark bright clean dirty "
    "broken spare favourite favorite usual own same other second first third last nearest "
    "closest biggest smallest lost missing blue-ish".split()
)
_PREPOSITIONS = frozenset(
    "for on onto with without of to in into under beneath beside near next behind from by "
    "at against inside over above below across around between among about like".split()
)
_PURPOSE_LEAD = frozenset("to for can could would will help me i we".split())
_SEARCH_VERBS = frozenset(
    "find locate get fetch bring grab take pick retrieve see spot show identify check "
    "inspect examine reach".split()
)
_GENERIC_HEADS = frozenset("something anything thing object item stuff one whatever".split())
_STOP = (
    _DETERMINERS
    | _PREPOSITIONS
    | frozenset(
        "is are was were be been am do does did find locate get fetch bring show where what which "
        "who how please need want look search see and or so if then there here somewhere around "
        "think left it".split()
    )
)


@dataclass(frozen=True)
class _Tok:
    text: str  # as written
    low: str
    norm: str
    sentence: int
    initial: bool  # first word of its sentence (capitalisation says nothing)


def _task_tokens(task: str) -> list[_Tok]:
    out: list[_Tok] = []
    text = normalise_text(task)
    sentence, initial = 0, True
    pos = 0
    for m in _WORD_RE.finditer(text):
        gap = text[pos : m.start()]
        if re.search(r"[.!?;:]", gap):
            sentence += 1 if re.search(r"[.!?]", gap) else 0
            initial = True
        if re.search(r"[\"']\s*$", gap):
            initial = True
        low = m.group().lower()
        out.append(_Tok(m.group(), low, singular(low), sentence, initial))
        initial = False
        pos = m.end()
    return out


def _functions_at(norms: list[str]) -> list[tuple[int, int, Function]]:
    """(token index, length, function) of every function trigger in the task."""
    hits = []
    for fn in FUNCTIONS:
        for trig in fn.triggers:
            p = phrase_tokens(trig)
            for i in range(len(norms) - len(p) + 1):
                if tuple(norms[i : i + len(p)]) == p:
                    hits.append((i, len(p), fn))
    return sorted(hits, key=lambda h: (h[0], -h[1], h[2].name))


def _is_complement(toks: list[_Tok], index: int, trigger_at: set[int]) -> bool:
    """Whether the noun at ``index`` is an object of a preposition or of a purpose verb
    ("a perch for my laptop", "something to haul boxes") rather than the goal itself."""
    j = index - 1
    steps = 0
    while j >= 0 and steps < 5:
        t = toks[j]
        if t.low in _PREPOSITIONS:
            return True
        if j in trigger_at:
            return j > 0 and toks[j - 1].low in _PURPOSE_LEAD
        if t.low in _SEARCH_VERBS:
            return False
        if j > 0 and toks[j - 1].low == "to" and not t.text[:1].isupper():
            return True  # governed by a purpose verb: "somewhere to rest my laptop"
        skippable = (
            t.low in _DETERMINERS
            or t.low in _ADJECTIVES
            or colour_family(t.low) is not None
            or t.low.isdigit()
            or (t.text[:1].isupper() and not t.initial)
            or t.low.endswith("'s")
        )
        if not skippable:
            return False
        j -= 1
        steps += 1
    return False


_PLACE_PREPOSITIONS = frozenset(
    "in at near inside into to toward towards behind beside under outside around across "
    "past through".split()
)


def _brand(toks: list[_Tok], noun_idx: set[int]) -> str | None:
    """A proper name in the task (a capitalised word mid-sentence the lexicon does not
    know, e.g. 'JanSport'), taken as a brand the goal must show. Names right after a
    place preposition ('in the Meeting Room') are places, not brands."""
    runs: list[tuple[int, list[_Tok]]] = []
    current: list[_Tok] = []
    start = 0
    for i, t in enumerate(toks):
        proper = (
            t.text[:1].isupper()
            and not t.initial
            and t.low != "i"
            and not t.low.endswith("'s")
            and i not in noun_idx
            and colour_family(t.low) is None
            and t.low not in _STOP
        )
        if proper:
            if not current:
                start = i
            current.append(t)
        elif current:
            runs.append((start, current))
            current = []
    if current:
        runs.append((start, current))
    for start, run in runs:
        j = start - 1
        while j >= 0 and toks[j].low in _DETERMINERS:
            j -= 1
        if j >= 0 and toks[j].low in _PLACE_PREPOSITIONS:
            continue
        return " ".join(t.text for t in run)
    return None


def _soft_sentences(task: str, toks: list[_Tok]) -> set[int]:
    soft = set()
    for s in sorted({t.sentence for t in toks}):
        norms = [t.norm for t in toks if t.sentence == s]
        if any(find_phrase(norms, m) >= 0 for m in SOFT_MARKERS):
            soft.add(s)
    return soft


def _written_text(task: str) -> tuple[str, ...]:
    m = re.search(
        r"\b(?:says|reads|reading|saying|labell?ed|marked|with the words?)\s+[\"']?([^\"'.;,!?]+)",
        normalise_text(task),
        re.I,
    )
    if not m:
        return ()
    return tuple(w for w in words(m.group(1)) if w not in _STOP)[:4]


def parse_task(task: str) -> Intent:
    """Read a task in natural language into an :class:`Intent` (deterministic)."""
    toks = _task_tokens(task)
    norms = [t.norm for t in toks]
    nouns = find_nouns(norms)
    fn_hits = _functions_at(norms)
    trigger_at = {i for i, _, _ in fn_hits}
    noun_idx = {k for h in nouns for k in range(h.index, h.index + h.length)}
    soft_sent = _soft_sentences(task, toks)

    head_hit = next((h for h in nouns if not _is_complement(toks, h.index, trigger_at)), None)
    # a noun that a purpose verb governs is not the goal ("something to carry boxes")
    function = None
    if head_hit is None and fn_hits:
        function = fn_hits[0][2]
    complements = [h for h in nouns if h is not head_hit]

    if head_hit is None and function is None and complements:
        head_hit = complements[0]  # "I need to charge my phone": the phone is all we know
        complements = complements[1:]
    if head_hit is not None:
        head = head_hit.phrase
        kinds: tuple[str, ...] = (head_hit.concept, *narrower(head_hit.concept))
        queries = [head, head_hit.concept, *QUERY_ALTERNATIVES.get(head_hit.concept, ())]
        queries += list(BROADER.get(head_hit.concept, ()))
        purpose = ""
    elif function is not None:
        kinds = tuple(dict.fromkeys(concept_of(c) or c for c in function.concepts))
        head = function.concepts[0]
        queries = list(function.concepts)
        purpose = function.purpose
    else:
        head = _fallback_head(toks)
        kinds = (concept_of(head) or head,)
        queries = [head]
        purpose = ""
    queries = list(dict.fromkeys(q for q in queries if q))[:5]

    identity: list[str] = []
    for k in kinds:
        identity.extend([k, *OBJECTS.get(k, ())])
    identity.append(head)
    related: list[str] = []
    for k in kinds:
        related.extend(b for b in BROADER.get(k, ()) if b not in identity)

    reqs: list[Requirement] = []
    head_span = set(range(head_hit.index, head_hit.index + head_hit.length)) if head_hit else set()

    def sentence_of(index: int) -> int:
        return toks[index].sentence if 0 <= index < len(toks) else 0

    for ev in EVIDENCE.values():
        at = -1
        for trig in ev.triggers:
            i = find_phrase(norms, trig)
            while i >= 0 and i in head_span:
                i = find_phrase(norms, trig, i + 1)
            if i >= 0 and (at < 0 or i < at):
                at = i
        if ev.name == "surface" and at < 0:
            comp = next((h for h in complements if h.concept in SURFACE_COMPLEMENTS), None)
            if comp is not None:
                at = comp.index
        if at < 0:
            continue
        implied = (ev.name == "surface" and any(k in SURFACE_KINDS for k in kinds)) or (
            ev.name == "wheels" and any(k in WHEELED_KINDS for k in kinds)
        )
        reqs.append(
            Requirement(
                kind="evidence",
                name=ev.name,
                label=ev.claim,
                positive=ev.positive,
                counter=ev.counter,
                question=ev.question,
                soft=sentence_of(at) in soft_sent,
                implied=implied,
            )
        )

    written = _written_text(task)
    brand = _brand(toks, noun_idx | {i for i, t in enumerate(toks) if t.low in written})
    if brand:
        at = next(i for i, t in enumerate(toks) if t.text == brand.split()[0])
        reqs.append(
            Requirement(
                kind="brand",
                name=brand,
                label=brand,
                positive=(brand,),
                counter=BRAND_MARKERS,
                question="What brand or logo does it show?",
                soft=sentence_of(at) in soft_sent,
            )
        )
    for t in toks:
        fam = colour_family(t.low)
        if fam and not any(r.kind == "colour" and r.name == fam for r in reqs):
            reqs.append(
                Requirement(
                    kind="colour",
                    name=fam,
                    label=t.low,
                    positive=COLOURS[fam],
                    counter=tuple(w for f, ws in COLOURS.items() if f != fam for w in ws),
                    question="What colour is it?",
                    soft=t.sentence in soft_sent,
                )
            )
    if written:
        reqs.append(
            Requirement(
                kind="text",
                name=" ".join(written),
                label=f"that reads '{' '.join(written)}'",
                positive=written,
                question="What is written on it?",
            )
        )
    reqs.extend(_contents(toks, complements, reqs, soft_sent, kinds))
    return Intent(
        task=task,
        head=head,
        kinds=kinds,
        function=function.name if (function and head_hit is None) else None,
        purpose=purpose,
        requirements=tuple(reqs),
        queries=tuple(queries),
        outdoor=any(t.low in OUTDOOR_WORDS for t in toks),
        identity=tuple(dict.fromkeys(identity)),
        related=tuple(dict.fromkeys(related)),
    )


def _contents(
    toks: list[_Tok],
    complements: list[NounHit],
    reqs: list[Requirement],
    soft_sent: set[int],
    kinds: tuple[str, ...],
) -> list[Requirement]:
    """Things the goal must hold or carry: 'the table with a toolbox on it', 'the barrel
    with water' (a lexicon noun or a content word after with / containing / full of)."""
    out: list[Requirement] = []
    lead = {"with", "contain", "containing", "hold", "holding", "of"}
    have_surface = any(r.name == "surface" for r in reqs)
    for i, t in enumerate(toks):
        if t.norm not in lead or (t.low == "of" and (i == 0 or toks[i - 1].low != "full")):
            continue
        j = i + 1
        while j < len(toks) and (toks[j].low in _DETERMINERS or toks[j].low in _ADJECTIVES):
            j += 1
        if j >= len(toks):
            continue
        noun = next((h for h in complements if h.index == j), None)
        if noun is not None:
            if noun.concept in kinds or (have_surface and noun.concept in SURFACE_COMPLEMENTS):
                continue
            if noun.concept in WHEELED_KINDS:
                continue
            names = (noun.concept, *OBJECTS.get(noun.concept, ()))
            label, question = f"with a {noun.phrase}", f"Is there a {noun.phrase} on or in it?"
        elif toks[j].low in CONTENT_WORDS:
            names, label = (toks[j].low,), f"with {toks[j].low}"
            question = f"Does it hold {toks[j].low}, and what does any label on it say?"
        else:
            continue
        soft = t.sentence in soft_sent
        if any(r.kind == "content" and r.positive == names for r in out):
            continue
        out.append(
            Requirement(
                kind="content",
                name=names[0],
                label=label,
                positive=names,
                question=question,
                soft=soft,
            )
        )
    return out


def _fallback_head(toks: list[_Tok]) -> str:
    """The goal word of a task that names nothing the lexicon knows: the last word of the
    first run of content words ("Find the blue kitchen sponge" -> "sponge")."""
    run: list[_Tok] = []
    for t in toks:
        content = not (
            t.low in _STOP
            or t.low.isdigit()
            or t.low in _ADJECTIVES
            or t.low in _GENERIC_HEADS
            or colour_family(t.low) is not None
        )
        if content:
            run.append(t)
        elif run:
            break
    return run[-1].norm if run else "object"
