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
* :data:`BRAND_CATEGORIES`, :data:`PLACES` - what a well-known brand makes, and where
  things of a kind are usually kept (searched when the map does not find them);
* :func:`parse_task` -> :class:`Intent` (goal kinds, map concepts to try in order, the
  requirements an inspection must confirm), and :func:`scan_cues`, a negation-aware cue
  finder ("no raised surface", "nothing to rest a laptop on" deny what they name).

The goal is read the way a person reads a request: the noun phrase after the search
verb or question word ("Could you find the Fluke meter?" -> meter, "Which crate is it
in?" -> crate, "Where is the LiPo balance charger?" -> charger), its head noun last,
whether the lexicon knows it or not; a purpose when the request asks for "something" or
"somewhere" ("anything I could safely stand on?" -> ladder, stool ...); sentence-initial
modal verbs, pronouns and the other sentences' nouns are context, not the goal.

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
    "box": _w(
        "box, carton, cardboard box, packing box, moving box, package, parcel, delivery, shipment"
    ),
    "crate": ("crate", "milk crate", "tote box"),
    "basket": ("basket", "hamper"),
    "tank": ("tank", "water tank"),
    # wheeled transport
    "cart": _w(
        "cart, trolley, wagon, dolly, hand truck, handcart, hand cart, pushcart, platform truck, "
        "utility cart, service cart"
    ),
    "wheelbarrow": ("wheelbarrow", "barrow"),
    "bicycle": ("bicycle", "bike", "road bike", "mountain bike", "ebike"),
    "scooter": ("scooter",),
    # bags and luggage
    "backpack": ("backpack", "rucksack", "knapsack", "daypack", "bookbag", "school bag"),
    "bag": _w(
        "bag, duffel, duffel bag, duffle, duffle bag, tote, tote bag, sack, satchel, handbag, "
        "purse, holdall, shopping bag, messenger bag, gym bag"
    ),
    "suitcase": ("suitcase", "luggage", "carry on"),
    # furniture
    "table": _w(
        "table, work table, worktable, side table, coffee table, dining table, picnic table, "
        "patio table"
    ),
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
    "fire blanket": ("fire blanket",),
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
    "umbrella": ("umbrella", "parasol", "sunshade"),
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
    "plant": _w("plant, potted plant, houseplant, fern, succulent, cactus, flower, planter, shrub"),
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
    "lid": ("lid", "flap", "box flap", "cap lid"),
    # more things a VLM names, so that a look-alike is recognised as something else
    "toy": ("toy", "plush", "plush toy", "stuffed toy", "stuffed animal", "teddy bear", "doll"),
    "fridge": ("fridge", "refrigerator", "freezer", "mini fridge"),
    "cooler": _w("cooler, cool box, coolbox, cooler box, ice chest, ice box, cool bag"),
    "sink": ("sink", "basin"),
    "tree": ("tree",),
    "car": ("car", "hatchback", "sedan", "van"),
    "jar": ("jar",),
    "speaker": ("speaker",),
    "envelope": ("envelope",),
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
    scope: tuple[str, ...] = ()  # functions or goal kinds it applies to (empty: any goal)


EVIDENCE: dict[str, EvidenceClass] = {
    "hazard": EvidenceClass(
        name="hazard",
        triggers=_w(
            "hazard, hazardous, dangerous, danger, toxic, poison, poisonous, harmful, corrosive, "
            "flammable, inflammable, chemical, unsafe, caustic, explosive, radioactive, hazmat, "
            "biohazard, acid, deadly, gloves, goggles, protective gear, respirator, fume hood, "
            "safety glasses"
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
        counter=_w(
            "sloped, slanted, uneven, cluttered, curved, narrow, too small, too narrow, "
            "slide through, slides through, fall through, falls through, no room"
        ),
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
    "stable": EvidenceClass(
        name="stable",
        triggers=_w("safely, safe to stand, sturdy, stable, steady, secure, solid, won't wobble"),
        positive=_w(
            "stable, sturdy, steady, solid, secure, locked, non slip, anti slip, non skid, "
            "rubber feet, braced, firm, rigid"
        ),
        counter=_w(
            "wobble, wobbly, wobbling, cracked, crack, broken, unstable, rickety, flimsy, roll, "
            "rolling, caster, castor, wheel, swivel, swivelling, swiveling, flex, flexing, "
            "collapsible, loose, damaged, tippy, tilt, tilting, bent, sagging"
        ),
        question="Is it sturdy and stable enough to stand on safely (no wheels, no damage)?",
        claim="that is stable enough to stand on",
        scope=("climb", "ladder", "stool", "chair", "bench", "box", "crate", "table"),
    ),
    "shade": EvidenceClass(
        name="shade",
        triggers=_w(
            "shade, shady, shaded, out of the sun, in the sun, sunny, sunshine, scorching, "
            "sweltering, boiling hot, too hot, sunburn, heat"
        ),
        positive=_w(
            "shade, shaded, shady, parasol, umbrella, canopy, awning, gazebo, pergola, roofed, "
            "under a tree, under the tree, sheltered, shelter, out of the sun"
        ),
        counter=_w(
            "full sun, direct sun, direct sunlight, sunny, exposed, in the sun, folded, closed, "
            "shut, furled"
        ),
        question="Is it in the shade (a parasol, canopy or tree over it), or in the sun?",
        claim="in the shade",
    ),
    "electrical": EvidenceClass(
        name="electrical",
        triggers=_w(
            "electrical, electric, electronic, electronics, power, plug, socket, outlet, wire, "
            "wiring, cable, cord, charger, charging, battery, batteries, soldering, computer, "
            "laptop, server, appliance, toaster, kettle, microwave, spark, sparks, sparking, "
            "voltage, circuit, fuse, power strip, extension lead, printer, monitor"
        ),
        positive=_w("electrical, electric, co2, carbon dioxide, dry powder, powder, class c"),
        counter=_w("water, foam, wet chemical"),
        question="What does its label say: which kind of extinguisher, and is it safe on "
        "electrical fires?",
        claim="safe to use on an electrical fire",
        scope=("fire", "fire extinguisher"),
    ),
    "insulated": EvidenceClass(
        name="insulated",
        triggers=_w("cold, chilled, chill, frozen, refrigerated, cool, on ice"),
        positive=_w(
            "insulated, insulation, cooler, cool box, thermal, chilled, refrigerated, fridge, "
            "freezer, foam lined, ice"
        ),
        counter=_w("thin, thin walled, mesh, cardboard, paper, open top, fabric"),
        question="Is it insulated, able to keep things cold?",
        claim="that keeps things cold",
        scope=("keep_cold",),
    ),
    "portable": EvidenceClass(
        name="portable",
        triggers=_w(
            "walk, carry, take them, take it, bring, transport, trip, outing, picnic, journey, "
            "travel, on the way, to the other"
        ),
        positive=_w("handle, carry handle, portable, strap, shoulder strap, handles"),
        counter=_w("plugged, plugged in, built in, mounted, fixed, bolted"),
        question="Can it be carried (a handle or strap), or is it fixed or plugged in?",
        claim="that can be carried",
        scope=("keep_cold",),
    ),
    "capacity": EvidenceClass(
        name="capacity",
        triggers=_w(
            "robot, furniture, sofa, couch, fridge, refrigerator, freezer, wardrobe, mattress, "
            "piano, machine, generator, engine, motor, washing machine, heavy, bulky, heavy load"
        ),
        positive=_w(
            "heavy duty, large, big, wide, spacious, flatbed, platform, rated, sturdy, long, "
            "full size"
        ),
        counter=_w("small, little, tiny, mini, compact, light duty, narrow, toy"),
        question="How big is its load surface, and how much weight can it take?",
        claim="big and strong enough for the load",
        scope=("transport",),
    ),
}
"""Properties a task may ask for (the ``capacity`` class only ever rules out: a cart
bought to move a robot is assumed big enough unless the view says it is small)."""

IMPLIED_EVIDENCE = ("capacity", "portable")
"""Evidence classes that are assumed to hold unless an inspection denies them."""

SURFACE_COMPLEMENTS = ("laptop", "monitor", "tablet", "keyboard")
"""Things a task may want to rest on the goal object: they ask for the surface class."""

BRAND_MARKERS = _w("logo, brand, branded, branding, emblem, trademark, made by, manufacturer")

BRAND_CATEGORIES: dict[str, str] = {
    **dict.fromkeys(
        _w("jansport, osprey, deuter, eastpak, herschel, fjallraven, kanken, targus, camelbak"),
        "backpack",
    ),
    **dict.fromkeys(_w("samsonite, rimowa, tumi, delsey, travelpro"), "suitcase"),
    **dict.fromkeys(_w("nalgene, thermos, hydroflask, kleankanteen, sigg, contigo"), "bottle"),
    **dict.fromkeys(
        _w("trek, giant, canyon, cannondale, specialized, brompton, bianchi, raleigh, scott"),
        "bicycle",
    ),
    **dict.fromkeys(_w("dewalt, makita, milwaukee, ryobi, hilti, metabo, festool"), "drill"),
    **dict.fromkeys(_w("fluke, multimeter"), "multimeter"),
    **dict.fromkeys(_w("macbook, thinkpad, chromebook"), "laptop"),
    **dict.fromkeys(_w("iphone, galaxy"), "phone"),
    **dict.fromkeys(_w("ipad, kindle"), "tablet"),
    **dict.fromkeys(_w("gopro, polaroid, nikon, canon"), "camera"),
    **dict.fromkeys(_w("dyson, roomba, hoover"), "vacuum"),
    **dict.fromkeys(_w("maglite"), "flashlight"),
    **dict.fromkeys(_w("lego"), "toy"),
    **dict.fromkeys(_w("moleskine"), "notebook"),
    **dict.fromkeys(_w("leatherman"), "tool"),
    **dict.fromkeys(_w("stanley, yeti"), "cup"),
}
"""Well-known brand (squashed to lower-case letters and digits) -> what kind of thing it
makes, for tasks that name only the brand ("my JanSport")."""

VAGUE_HEADS = frozenset(
    _w("ride, wheel, wheels, gear, kit, stuff, baby, beast, machine, unit, device, thing, item")
)
"""Words that name a thing only vaguely ("my ride"): a brand in the task says what it is."""

PERSONAL_CONTAINERS = ("bag", "case", "box")
"""Where an unknown brand's thing may be found: things people carry their belongings in
(queried before a catch-all "object"; the brand seen on inspection decides)."""

TECH_TERMS = frozenset(
    _w(
        "lipo, li, ion, nimh, led, leds, usb, hdmi, gps, co2, aa, aaa, ac, dc, pc, tv, wifi, 3d, "
        "lcd, rgb, diy, pvc, ups, sd, ssd, hdd, cpu, gpu, ram, dvd, cd, id, it, hr, pdf, abc"
    )
)
"""Capitalised words that name a technology, not a brand ("LiPo balance charger")."""

TITLES = frozenset(_w("dr, mr, mrs, ms, mx, miss, prof, professor, sir, madam, dame"))
"""Words that put a person's name after them ("Dr. Chen", "Prof. Alvarez")."""

PLACES: dict[str, tuple[str, ...]] = {
    "bicycle": ("bike rack",),
    "scooter": ("bike rack",),
    "backpack": ("desk", "chair"),
    "bag": ("desk", "chair"),
    "suitcase": ("door", "desk"),
    "jacket": ("chair", "coat rack"),
    "hat": ("coat rack", "desk"),
    "umbrella": ("door", "coat rack"),
    "box": ("shelf", "desk"),
    "toolbox": ("workbench", "shelf"),
    "tool": ("workbench", "toolbox"),
    "laptop": ("desk", "table"),
    "phone": ("desk", "table"),
    "tablet": ("desk", "table"),
    "camera": ("desk", "shelf"),
    "book": ("shelf", "desk"),
    "cup": ("table", "counter"),
    "bottle": ("table", "counter"),
    "plate": ("table", "counter"),
    "bowl": ("table", "counter"),
    "fire extinguisher": ("door", "wall"),
    "flashlight": ("shelf", "drawer"),
}
"""Where things of a kind are usually kept: searched once the thing itself is not found."""

SMALL_THING_PLACES = ("workbench", "table", "shelf")
"""Where an unknown (hand-sized) thing is looked for when the map does not find it."""

CONTAINER_KINDS = frozenset(
    _w(
        "box, crate, bin, bag, backpack, suitcase, basket, bucket, barrel, drawer, cabinet, "
        "container, toolbox, canister, tank, jar, bottle, cup, bowl"
    )
)
"""Kinds that hold things inside them ("which crate is it in?")."""

PACKED_CONTAINERS = ("box", "crate", "container", "bag", "suitcase")
"""Where something "got packed" when the task does not say in what."""

CONTENT_MARKERS = _w(
    "inside, contains, containing, holds, holding, full of, filled with, packed with, stacked "
    "with, loaded with, empty"
)
"""Words with which a VLM lists (or denies) what a container holds."""

MATERIALS: dict[str, tuple[str, ...]] = {
    "plastic": _w("plastic, plastics, pet, packaging, tub, tubs"),
    "glass": _w("glass, jar, jars"),
    "paper": _w("paper, card, cardboard, newspaper, magazine, carton"),
    "metal": _w("metal, can, cans, tin, tins, aluminium, aluminum, foil, steel"),
    "organic": _w("food, organic, compost, garden waste, biodegradable, peel, leftovers"),
    "battery": _w("battery, batteries, electronics, e waste, weee"),
}
"""Waste material family -> the words a bin's label uses for it."""

ITEM_MATERIAL = {
    "jar": "glass",
    "newspaper": "paper",
    "magazine": "paper",
    "envelope": "paper",
    "cardboard": "paper",
    "carton": "paper",
    "tin": "metal",
    "foil": "metal",
    "battery": "battery",
    "peel": "organic",
    "core": "organic",
    "leftovers": "organic",
}
"""The material of common waste items, when the task does not name it."""

GENERAL_WASTE = _w("general waste, landfill, residual waste, non recyclable, rubbish only")
RECYCLING_WORDS = _w("recycling, recyclable, recyclables, mixed recycling")

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
    refines: tuple[str, ...] = ()  # functions it makes more specific (pack -> keep cold)


FUNCTIONS: tuple[Function, ...] = (
    Function(
        "transport",
        _forms("transport", "carry", "haul", "move", "ferry", "lug", "shift", "trundle")
        + _w(
            "take equipment, bring equipment, heavy load, heavy loads, push around, i wheel, "
            "we wheel, to wheel, you wheel, wheeling"
        ),
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
        _forms("dispose", "discard", "recycle")
        + ("throw away", "throw out", "get rid of", "rubbish", "garbage", "trash", "litter")
        + ("finished", "done with", "used up", "bin it"),
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
        _forms("climb", "reach")
        + _w(
            "high shelf, top shelf, get up to, get up on, step on, step up, stand on, standing on, "
            "stand up on, climb onto, climb on, up high, high cupboard"
        ),
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
        _forms("extinguish")
        + _w(
            "put out the fire, put out a fire, fire, blaze, flames, put it out, put this out, "
            "put them out, smoke, smoking, smouldering, burning, caught fire, on fire"
        ),
        ("fire extinguisher", "fire blanket"),
        "to fight a fire",
    ),
    Function(
        "keep_cold",
        _w(
            "stay cold, keep cold, keep cool, stay cool, cold, chilled, chill, frozen, "
            "refrigerated, on ice"
        ),
        ("cooler", "cool box", "ice chest", "fridge"),
        "to keep things cold",
        refines=("pack", "transport", "store"),
    ),
    Function(
        "eat",
        _forms("eat")
        + _w("ate, lunch, dinner, breakfast, meal, picnic, snack, sandwich, have our food"),
        ("picnic table", "table", "bench"),
        "to eat at",
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
    "thermos": "thermos",
    "lens": "lens",
    "canvas": "canvas",
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

    ``kind``: ``evidence`` (an :class:`EvidenceClass` by ``name``), ``brand``, ``name`` (a
    person's name on its label), ``colour``, ``text`` (words written on it), ``content`` (a
    named thing or material on or in it), ``marking`` (what a sticker, tag or print on it
    shows: the ``positive`` words; ``counter`` names the carrier), ``material`` (what a bin
    takes), ``descriptor`` (words of the goal's name: "road" bike, "impact" driver),
    ``relation`` (a landmark seen beside it: "on the dark counter", "next to the kettle").
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
    detail: tuple[str, ...] = ()  # words that must stand beside a positive word (a landmark's)


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
    places: tuple[str, ...] = ()  # where such things are kept (searched when not found)
    unknown_head: bool = False  # the goal noun is not in the lexicon ("meter", "charger")

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
        elif not self.kinds:
            first = "What is this?"
        else:
            first = f"What is this; is it a {self.head}?"
        parts = [first] + [r.question for r in self.requirements if r.question]
        parts.append("Is it covered by anything?")
        return " ".join(dict.fromkeys(parts))


# --------------------------------------------------------------------------- reading a task

_DETERMINERS = frozenset(
    "the a an my your his her our their its this that these those some any one another "
    "me us him them i you we it".split()
)
_ARTICLES = frozenset(
    "the a an my your his her our their its this that these those some any another every each "
    "no".split()
)
_ADJECTIVES = frozenset(
    "big small large little old new heavy light empty full tall short long wide narrow "
    "round square flat plastic metal wooden steel cardboard leather dark bright clean dirty "
    "broken spare favourite favorite usual own same other second first third last nearest "
    "closest biggest smallest lost missing blue-ish right correct proper best good".split()
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
_GENERIC_HEADS = frozenset(
    "something anything thing object item stuff one whatever somewhere someplace anywhere "
    "place spot way".split()
)
_MODALS = frozenset("can could would will shall should may might must".split())
_AUXILIARIES = frozenset(
    "is are was were be been being am do does did has have had get got gets getting "
    "it's that's there's here's i'm i've i'd i'll you're we're they're".split()
)
_PRONOUN_HEADS = frozenset(
    "it them they this that these those one ones mine yours ours theirs hers his he she "
    "him her me us i you we someone somebody".split()
)
_CONJUNCTIONS = frozenset(
    "and or but so because since while if when than then nor yet until unless though".split()
)
_RELATIVES = frozenset("that which who whom whose where what why how".split())
_ADVERBS = frozenset(
    "please here there now today again too also already just still somewhere anywhere "
    "everywhere around down up away out off back soon yesterday tomorrow tonight earlier "
    "later ever really very quickly safely".split()
)
_PHRASE_VERBS = frozenset(
    "labelled labeled marked called named tagged packed put stored left placed kept hidden "
    "sitting standing lying holding containing filled covered need needs want wants think "
    "keep keeps go goes went ended end came come arrived ran runs belong belongs holds hold "
    "contains contain carries sits sit stands lies looks seems includes fits".split()
)
_NP_STOP = (
    _PREPOSITIONS | _MODALS | _AUXILIARIES | _CONJUNCTIONS | _RELATIVES | _ADVERBS
    | _PHRASE_VERBS | {"to", "not", "no", "n't"}
)  # fmt: skip
_STOP = (
    _DETERMINERS
    | _PREPOSITIONS
    | _MODALS
    | _AUXILIARIES
    | frozenset(
        "is are was were be been am do does did find locate get fetch bring show where what which "
        "who how please need want look looking search see and or so if then there here somewhere "
        "around think left it can't won't i'm i've it's".split()
    )
)
_REQUEST_LEAD = frozenset(
    "need needs want wants have has had like love trying try going please help me us able how "
    "where".split()
)
_SEARCH_PHRASES: tuple[tuple[str, ...], ...] = tuple(
    sorted(
        {
            tuple(p.split())
            for p in _w(
                "find, locate, get, fetch, bring, grab, retrieve, spot, show, identify, track, "
                "track down, hunt down, look for, looking for, look around for, looking around "
                "for, search for, searching for, hunt for, hunting for, seek, seeking, point me "
                "to, point out, take me to, lead me to, direct me to, need, want, where is, where "
                "are, where's, where, have you seen, has anyone seen, is there, are there, which, "
                "what, where did i leave, where did i put, where have i left, where have i put, "
                "where did i drop, where did i set, lost, misplaced"
            )
        },
        key=lambda p: (-len(p), p),
    )
)
_NOT_SEARCH_NEXT = frozenset("rid to up ready done started going used".split())
_PACK_VERBS = frozenset(
    "packed pack packing put stored stowed placed kept left hidden tucked dropped loaded shipped "
    "boxed went ended stashed".split()
)
_PACK_PREPOSITIONS = frozenset("in into inside onto on under within".split())
_GENERIC_CONTENT = frozenset(
    "content contents stuff thing things something anything item items inside room space".split()
)


@dataclass(frozen=True)
class _Tok:
    text: str  # as written
    low: str
    norm: str
    sentence: int
    initial: bool  # first word of its sentence (capitalisation says nothing)
    clause: int  # clauses end at any punctuation mark between words


def _task_tokens(task: str) -> list[_Tok]:
    out: list[_Tok] = []
    text = normalise_text(task)
    sentence, clause, initial = 0, 0, True
    pos = 0
    for m in _WORD_RE.finditer(text):
        gap = text[pos : m.start()]
        prev = out[-1] if out else None
        # "Dr. Chen", "J. Smith": a title or an initial before a full stop ends no sentence
        abbrev = prev is not None and (prev.low in TITLES or re.fullmatch(r"[A-Z]", prev.text))
        if re.search(r"[.!?;:]", gap) and not (abbrev and re.fullmatch(r"\.\s*", gap)):
            sentence += 1 if re.search(r"[.!?]", gap) else 0
            initial = True
        if re.search(r"[\"']\s*$", gap):
            initial = True
        if re.search(r"[.!?;:,()\"]|\s[-\u2014]\s|\s-|-\s", gap) and not (
            abbrev and re.fullmatch(r"\.\s*", gap)
        ):
            clause += 1
        low = m.group().lower()
        out.append(_Tok(m.group(), low, singular(low), sentence, initial, clause))
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


# --------------------------------------------------------------------------- noun phrases


@dataclass(frozen=True)
class _Phrase:
    """A noun phrase of the task: its words (modifiers, then the head) and what heads it."""

    tokens: tuple[int, ...]  # token indices, the head last
    hit: NounHit | None  # the lexicon noun that heads it, if the lexicon knows the head
    kind: str  # "noun" | "generic" ("something") | "pronoun" ("it") | "empty"

    @property
    def head(self) -> int:
        return self.tokens[-1]

    @property
    def start(self) -> int:
        return self.hit.index if self.hit is not None else self.head


_EMPTY = _Phrase((), None, "empty")


def _noun_hits(norms: list[str]) -> dict[int, NounHit]:
    return {h.index: h for h in find_nouns(norms)}


def _phrase_at(toks: list[_Tok], i: int, hits: dict[int, NounHit]) -> _Phrase:
    """The noun phrase that starts at token ``i`` (after determiners and "one of the"):
    words up to a preposition, verb, conjunction or punctuation; English heads come last
    ("the Fluke meter" -> meter, "the LiPo balance charger" -> charger)."""
    n = len(toks)
    j = i
    while j < n:
        low = toks[j].low
        if (
            low in _ARTICLES
            and low not in ("this", "that")
            or low in ("this", "that")
            and (
                j + 1 < n
                and toks[j + 1].clause == toks[j].clause
                and toks[j + 1].low not in _NP_STOP
            )
        ):
            j += 1
        elif low in ("one", "any", "some", "each", "all", "both", "either", "none", "which") and (
            j + 1 < n and toks[j + 1].low == "of"
        ):
            j += 2
        elif low == "of" and j == i:
            j += 1
        else:
            break
    if j >= n:
        return _EMPTY
    if toks[j].low in _PRONOUN_HEADS:
        return _Phrase((j,), None, "pronoun")
    clause = toks[j].clause
    idx: list[int] = []
    lexical = False
    while j < n and len(idx) < 6:
        t = toks[j]
        if t.clause != clause:
            break
        hit = hits.get(j)
        if hit is not None:
            idx.extend(range(j, j + hit.length))
            lexical = True
            j += hit.length
            continue
        if t.low in _NP_STOP or t.low in _DETERMINERS or t.low in _PRONOUN_HEADS:
            break
        verbish = t.low.endswith("ing") or (t.low.endswith("ed") and len(t.low) > 4)
        nxt = toks[j + 1] if j + 1 < n else None
        modifies = nxt is not None and nxt.clause == clause and nxt.low not in _NP_STOP
        if verbish and (lexical or not (idx or modifies)) and not t.text[:1].isupper():
            break  # "the container holding ...", "need charging" (not "a lightning sticker")
        idx.append(j)
        j += 1
        if t.low in _GENERIC_HEADS:
            break
    while idx and (
        colour_family(toks[idx[-1]].low) is not None
        or toks[idx[-1]].low in _ADJECTIVES
        or toks[idx[-1]].low.isdigit()
    ):
        idx.pop()  # "the red" names no thing
    if not idx:
        return _EMPTY
    head = idx[-1]
    hit = next((h for h in hits.values() if h.index <= head < h.index + h.length), None)
    if hit is not None:
        idx = [k for k in idx if k < hit.index or k >= hit.index + hit.length] + list(
            range(hit.index, hit.index + hit.length)
        )
        idx = sorted(set(idx), key=lambda k: (k >= hit.index, k))
    kind = "generic" if toks[head].low in _GENERIC_HEADS else "noun"
    return _Phrase(tuple(idx), hit, kind)


def _purposive(lows: list[str], i: int) -> bool:
    """Whether a search verb at ``i`` is part of a purpose ("... to get the box down",
    "so I can reach it") rather than the request itself ("I need to find ...")."""
    prev = lows[max(0, i - 3) : i]
    if prev and prev[-1] == "to":
        return len(prev) < 2 or prev[-2] not in _REQUEST_LEAD
    return "so" in prev


@dataclass(frozen=True)
class _Request:
    """How the task asks for its goal."""

    phrase: _Phrase | None  # the goal noun phrase ("the Fluke meter"), if a noun is asked for
    sentence: int | None  # the sentence of a request for "something" / "somewhere" / nothing
    pronoun: bool  # the request names the goal only as "it"
    packed: _Phrase | None  # "where did my camera get packed?": the thing packed


def _request(toks: list[_Tok], hits: dict[int, NounHit]) -> _Request:
    lows = [t.low for t in toks]
    n = len(toks)
    generic: int | None = None
    pronoun = False
    i = 0
    while i < n:
        match = next((p for p in _SEARCH_PHRASES if tuple(lows[i : i + len(p)]) == p), None)
        if (
            match is None
            or _purposive(lows, i)
            or (i + len(match) < n and lows[i + len(match)] in _NOT_SEARCH_NEXT)
        ):
            t = toks[i]
            if t.low in ("anything", "something") and t.initial and generic is None:
                generic = t.sentence
            i += 1
            continue
        k = i + len(match)
        if match[0] == "where" and k < n and lows[k] in _AUXILIARIES | {"has", "have"}:
            packed = _phrase_at(toks, k + 1, hits)
            after = lows[packed.head + 1 : packed.head + 4] if packed.tokens else []
            if packed.kind == "noun" and any(w in _PACK_VERBS for w in after):
                return _Request(None, None, False, packed)
            if packed.kind == "noun":
                return _Request(packed, toks[i].sentence, False, None)
        if k < n and lows[k] in ("me", "us"):
            k += 1
        if (
            k + 1 < n
            and lows[k] in ("over", "back", "along", "down", "out")
            and (lows[k + 1] in _ARTICLES)
        ):
            k += 1
        ph = _phrase_at(toks, k, hits)
        if ph.kind == "noun":
            return _Request(ph, toks[i].sentence, False, None)
        if ph.kind == "pronoun":
            pronoun = True
        elif generic is None:
            generic = toks[i].sentence
        i = max(k, i + 1)
    return _Request(None, generic, pronoun, None)


def _phrases(toks: list[_Tok], hits: dict[int, NounHit]) -> list[_Phrase]:
    """Noun phrases led by an article or possessive ("the stopwatch", "my headphones"), or
    starting a sentence, in task order."""
    out: list[_Phrase] = []
    covered: set[int] = set()
    for i, t in enumerate(toks):
        if i in covered or not (t.low in _ARTICLES or t.initial):
            continue
        ph = _phrase_at(toks, i, hits)
        if ph.kind == "noun":
            out.append(ph)
            covered.update(range(i, ph.head + 1))
    return out


# --------------------------------------------------------------------------- task parts


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _is_proper(t: _Tok) -> bool:
    """A capitalised word mid-sentence that is not a technology acronym ("JanSport")."""
    return (
        t.text[:1].isupper()
        and not t.initial
        and t.low != "i"
        and not t.low.endswith("'s")
        and t.low not in TECH_TERMS
        and t.low not in TITLES
        and colour_family(t.low) is None
        and t.low not in _STOP
    )


_PLACE_PREPOSITIONS = frozenset(
    "in at near inside into to toward towards behind beside under outside around across "
    "past through".split()
)


def _names(toks: list[_Tok]) -> tuple[str | None, set[int]]:
    """A person's surname after a title ("Dr. L. Chen" -> "Chen") and the tokens it uses."""
    for i, t in enumerate(toks):
        initial = re.fullmatch(r"[A-HJ-Z]", t.text) is not None  # "M. Okafor" (not "I")
        if (t.low not in TITLES and not initial) or i + 1 >= len(toks):
            continue
        if not toks[i + 1].text[:1].isupper() or (initial and len(toks[i + 1].text) < 2):
            continue
        used = {i}
        surname = None
        j = i + 1
        while j < len(toks) and toks[j].text[:1].isupper() and toks[j].sentence == t.sentence:
            used.add(j)
            if len(toks[j].text) > 1:
                surname = toks[j].text
            j += 1
        if surname:
            return surname, used
    return None, set()


def _brand(toks: list[_Tok], skip: set[int]) -> str | None:
    """A proper name in the task (a capitalised word mid-sentence the lexicon does not
    know, e.g. 'JanSport'), taken as a brand the goal must show. Names right after a
    place preposition ('in the Meeting Room') are places, not brands."""
    runs: list[tuple[int, list[_Tok]]] = []
    current: list[_Tok] = []
    start = 0
    for i, t in enumerate(toks):
        if _is_proper(t) and i not in skip:
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


def _soft_sentences(toks: list[_Tok]) -> set[int]:
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


def _descriptors(toks: list[_Tok], ph: _Phrase, skip: set[int]) -> list[_Tok]:
    """Words of a goal phrase that say which kind of the head it is ("road" bike, "LiPo
    balance" charger): not articles, adjectives, colours, brands or possessives."""
    out = []
    start = ph.hit.index if ph.hit is not None else ph.head
    for k in ph.tokens:
        t = toks[k]
        if k >= start or k in skip or _is_proper(t) or t.low.endswith("'s"):
            continue
        if t.low in _ADJECTIVES or t.low in _STOP or colour_family(t.low) or t.low.isdigit():
            continue
        out.append(t)
    return out


@dataclass(frozen=True)
class _Goal:
    """The goal as read from the task, before requirements."""

    head: str
    kinds: tuple[str, ...]
    queries: tuple[str, ...]
    places: tuple[str, ...]
    span: frozenset[int]  # token indices of the goal phrase
    phrase: _Phrase | None
    function: Function | None = None
    unknown: bool = False
    brand: str | None = None  # a brand the goal phrase consists of ("my JanSport")


def _lexicon_goal(hit: NounHit, phrase: _Phrase | None, span: frozenset[int]) -> _Goal:
    kinds = (hit.concept, *narrower(hit.concept))
    queries = [hit.phrase, hit.concept, *QUERY_ALTERNATIVES.get(hit.concept, ())]
    queries += list(BROADER.get(hit.concept, ()))
    return _Goal(hit.phrase, kinds, tuple(queries), PLACES.get(hit.concept, ()), span, phrase)


def _category_goal(category: str, brand: str, ph: _Phrase) -> _Goal:
    span = frozenset(ph.tokens)
    hit = find_nouns(norm_words(category))
    if hit and hit[0].length == len(norm_words(category)):
        g = _lexicon_goal(hit[0], ph, span)
        return _Goal(g.head, g.kinds, g.queries, g.places, span, ph, brand=brand)
    return _Goal(category, (category,), (category,), SMALL_THING_PLACES, span, ph, None, True,
                 brand)  # fmt: skip


def _phrase_goal(toks: list[_Tok], ph: _Phrase, skip: set[int]) -> _Goal:
    """The goal a noun phrase names: a lexicon kind, a brand's category, or an unknown noun."""
    span = frozenset(ph.tokens)
    if ph.hit is not None:
        return _lexicon_goal(ph.hit, ph, span)
    head = toks[ph.head]
    if _is_proper(head) and ph.head not in skip:
        # only a brand ("my JanSport"): its usual category, else any personal container
        run = [toks[k].text for k in ph.tokens if _is_proper(toks[k])]
        brand = " ".join(run) if run else head.text
        category = BRAND_CATEGORIES.get(_squash(brand)) or BRAND_CATEGORIES.get(head.low)
        if category:
            return _category_goal(category, brand, ph)
        queries = (*PERSONAL_CONTAINERS, "object")
        return _Goal(brand, (), queries, (), span, ph, None, True, brand)
    desc = [t.norm if t.low not in TECH_TERMS else t.text for t in _descriptors(toks, ph, skip)]
    full = " ".join([*desc[-2:], head.norm])
    queries = tuple(dict.fromkeys([full, head.norm]))
    return _Goal(head.norm, (head.norm,), queries, SMALL_THING_PLACES, span, ph, None, True)


def _function_goal(fn: Function) -> _Goal:
    kinds = tuple(dict.fromkeys(concept_of(c) or c for c in fn.concepts))
    return _Goal(fn.concepts[0], kinds, fn.concepts, (), frozenset(), None, fn)


def _fallback_head(toks: list[_Tok]) -> str:
    """The goal word of a task that names nothing the lexicon knows: the last word of the
    first run of content words ("Find the blue kitchen sponge" -> "sponge")."""
    run: list[_Tok] = []
    for t in toks:
        content = not (
            t.low in _STOP
            or t.low in _NP_STOP
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


def _read_goal(toks: list[_Tok], hits: dict[int, NounHit], skip: set[int]) -> _Goal:
    """What the task asks for (see :func:`_request_goal`); a vague word for it ("my ride",
    "my wheels") takes the kind of thing a brand named in the task makes."""
    goal = _request_goal(toks, hits, skip)
    if not goal.unknown or goal.head not in VAGUE_HEADS:
        return goal
    brand = next((t for t in toks if _is_proper(t) and _squash(t.text) in BRAND_CATEGORIES), None)
    if brand is None:
        return goal
    g = _category_goal(BRAND_CATEGORIES[_squash(brand.text)], brand.text, goal.phrase or _EMPTY)
    return _Goal(g.head, g.kinds, g.queries, g.places, goal.span, goal.phrase, None, g.unknown)


_HOLDER_PREPOSITIONS = frozenset("in inside into within".split())


def _holder(toks: list[_Tok], hits: dict[int, NounHit]) -> _Phrase | None:
    """The container the task says its thing is in: "it's in one of these parcels",
    "the drill is inside one of the boxes", "packed into one of the crates"."""
    lows = [t.low for t in toks]
    for i, low in enumerate(lows[:-2]):
        if low not in _HOLDER_PREPOSITIONS or lows[i + 1 : i + 3] != ["one", "of"]:
            continue
        ph = _phrase_at(toks, i + 1, hits)
        if ph.kind == "noun" and ph.hit is not None and ph.hit.concept in CONTAINER_KINDS:
            return ph
    return None


def _request_goal(toks: list[_Tok], hits: dict[int, NounHit], skip: set[int]) -> _Goal:
    """What the task asks for: the container when the thing is "in one of the
    crates" (the answer is the crate that holds it); else the noun phrase of the
    request ("Could you find the X?", "Which X ...?", "Where is the X?"); a function
    when it asks for "something" or "somewhere" to do a thing; else the first noun that
    is not a complement."""
    norms = [t.norm for t in toks]
    holder = _holder(toks, hits)
    if holder is not None:
        return _phrase_goal(toks, holder, skip)
    req = _request(toks, hits)
    if req.packed is not None:
        return _Goal(
            PACKED_CONTAINERS[0],
            PACKED_CONTAINERS,
            PACKED_CONTAINERS,
            (),
            frozenset(),
            None,
        )
    if req.phrase is not None:
        return _phrase_goal(toks, req.phrase, skip)
    fn_hits = _functions_at(norms)
    if req.sentence is not None:
        in_request = [h for h in fn_hits if toks[h[0]].sentence == req.sentence]
        if in_request or fn_hits:
            fn = (in_request or fn_hits)[0][2]
            finer = next((h[2] for h in fn_hits if fn.name in h[2].refines), None)
            return _function_goal(finer or fn)
    trigger_at = {i for i, _, _ in fn_hits}
    nouns = list(hits.values())
    head_hit = next((h for h in nouns if not _is_complement(toks, h.index, trigger_at)), None)
    if head_hit is not None:
        ph = _Phrase(
            tuple(range(head_hit.index, head_hit.index + head_hit.length)), head_hit, "noun"
        )
        return _lexicon_goal(head_hit, ph, frozenset(ph.tokens))
    if fn_hits:
        return _function_goal(fn_hits[0][2])
    if nouns:  # "I need to charge my phone": the phone is all we know
        h = nouns[0]
        ph = _Phrase(tuple(range(h.index, h.index + h.length)), h, "noun")
        return _lexicon_goal(h, ph, frozenset(ph.tokens))
    head = _fallback_head(toks)
    return _Goal(head, (head,), (head,), SMALL_THING_PLACES, frozenset(), None, None, True)


def _antecedent(toks: list[_Tok], hits: dict[int, NounHit], goal: _Goal) -> _Phrase | None:
    """What "it" refers to in "which crate is it in?": the first noun phrase of the task
    that is not the goal and not a place ("Our spare lidar got packed ...")."""
    for ph in _phrases(toks, hits):
        if ph.head in goal.span:
            continue
        if ph.hit is not None and ph.hit.concept in goal.kinds:
            continue
        if toks[ph.head].norm in goal.kinds:
            continue
        j = min(ph.tokens) - 1
        while j >= 0 and toks[j].low in _ARTICLES:
            j -= 1
        if j >= 0 and toks[j].low in _PLACE_PREPOSITIONS | {"for", "from", "of"}:
            continue
        return ph
    return None


def _content_requirement(
    toks: list[_Tok], ph: _Phrase, soft: bool, *, lead: str = "with"
) -> Requirement:
    """'with the new LiPo packs' -> the distinctive words an inspection must see in or on
    the goal (a technology or proper word of the phrase first, else its head)."""
    head = toks[ph.head]
    if ph.hit is not None:
        names: tuple[str, ...] = (ph.hit.concept, *OBJECTS.get(ph.hit.concept, ()))
    else:
        names = (head.norm,)
    special = [
        toks[k].norm
        for k in ph.tokens
        if k < ph.start
        and (toks[k].low in TECH_TERMS or toks[k].text[:1].isupper())
        and not toks[k].initial
    ]
    positive = tuple(dict.fromkeys([*special[:1], *names])) if special else names
    words_ = " ".join(toks[k].text for k in ph.tokens if toks[k].low not in _ADJECTIVES)
    if special:
        positive = (special[0],)
    return Requirement(
        kind="content",
        name=positive[0],
        label=f"{lead} {words_}",
        positive=positive,
        question=f"What is in or on it; is there {words_}?",
        soft=soft,
    )


def _contents(
    toks: list[_Tok],
    hits: dict[int, NounHit],
    goal: _Goal,
    reqs: list[Requirement],
    soft_sent: set[int],
) -> list[Requirement]:
    """Things the goal must hold, carry or show: 'the table with a toolbox on it', 'the
    barrel with water', 'which crate holds the spare propellers', 'which box is it in'
    (with what "it" refers to), 'a penguin sticker on it' (the marking's subject)."""
    out: list[Requirement] = []
    lows = [t.low for t in toks]
    have_surface = any(r.name == "surface" for r in reqs)
    container = any(k in CONTAINER_KINDS for k in goal.kinds)
    triggers = {phrase_tokens(t) for ev in EVIDENCE.values() for t in ev.triggers}
    lead_words = {"with", "contain", "contains", "containing", "hold", "holds", "holding", "has",
                  "have", "having", "of", "bearing"}  # fmt: skip

    def add(req: Requirement) -> None:
        if not any(r.kind == req.kind and r.positive == req.positive for r in out):
            out.append(req)

    def content_of(ph: _Phrase, soft: bool, lead: str) -> None:
        if ph.kind == "pronoun":
            ante = _antecedent(toks, hits, goal)
            if ante is not None:
                add(_content_requirement(toks, ante, soft, lead="with"))
            return
        if ph.kind != "noun" or ph.head in goal.span:
            return
        head = toks[ph.head]
        words_ = [toks[k].norm for k in ph.tokens]
        if head.norm in _GENERIC_CONTENT or any(
            tuple(words_[a : a + len(p)]) == p for p in triggers for a in range(len(words_))
        ):
            return  # "dangerous contents": an evidence class says what to look for
        concept = ph.hit.concept if ph.hit is not None else None
        if concept is not None and (
            concept in goal.kinds
            or (have_surface and concept in SURFACE_COMPLEMENTS)
            or concept in WHEELED_KINDS
        ):
            return
        carrier = head.low in CARRIER_WORDS or head.norm in CARRIER_WORDS or concept in CARRIERS
        if carrier:
            mods = [
                toks[k].norm
                for k in ph.tokens
                if k < ph.start
                and toks[k].low not in _ADJECTIVES
                and colour_family(toks[k].low) is None
                and not _is_proper(toks[k])
                and toks[k].low not in _STOP
            ]
            if any(_is_proper(toks[k]) for k in ph.tokens):
                return  # "a Canyon decal": the brand requirement covers it
            if mods:
                add(
                    Requirement(
                        kind="marking",
                        name=mods[-1],
                        label=f"with a {' '.join(mods)} {head.norm}",
                        positive=(mods[-1],),
                        counter=tuple(dict.fromkeys([head.norm, *CARRIER_WORDS])),
                        question=f"Is there a {head.norm} on it, and what does it show?",
                        soft=soft,
                    )
                )
                return
        if concept is not None or head.low in CONTENT_WORDS or container or lead != "with":
            if concept is None and head.low in CONTENT_WORDS:
                add(
                    Requirement(
                        kind="content",
                        name=head.low,
                        label=f"with {head.low}",
                        positive=(head.low,),
                        question=f"Does it hold {head.low}, and what does any label on it say?",
                        soft=soft,
                    )
                )
                return
            if concept is not None and not container and lead == "with":
                names = (concept, *OBJECTS.get(concept, ()))
                add(
                    Requirement(
                        kind="content",
                        name=names[0],
                        label=f"with a {ph.hit.phrase}",
                        positive=names,
                        question=f"Is there a {ph.hit.phrase} on or in it?",
                        soft=soft,
                    )
                )
                return
            add(_content_requirement(toks, ph, soft, lead="with" if lead == "with" else "holding"))

    for i, t in enumerate(toks):
        if t.low not in lead_words and t.norm not in lead_words:
            continue
        if t.low == "of" and (i == 0 or toks[i - 1].low != "full"):
            continue
        if t.low in ("has", "have", "having") and i + 1 < len(toks) and lows[i + 1] in (
            "to", "been", "got", "just"
        ):  # fmt: skip
            continue
        if t.low not in ("with", "of") and not (
            i > 0 and (i - 1 in goal.span or lows[i - 1] in ("it", "that", "which", "and", "also"))
        ):
            continue  # "I have some rubbish", "to have lunch": not what the goal holds
        content_of(_phrase_at(toks, i + 1, hits), t.sentence in soft_sent, t.low)
    if container and goal.phrase is not None:
        # "which crate is it in", "which box are they in"
        after = lows[goal.phrase.head + 1 : goal.phrase.head + 5]
        if (
            len(after) >= 3
            and after[0] in _AUXILIARIES
            and after[1] in _PRONOUN_HEADS
            and (after[2] in ("in", "inside", "under"))
        ):
            content_of(_Phrase((goal.phrase.head + 2,), None, "pronoun"), False, "in")
        # "X got packed into one of the crates", "I stowed X in one of the bins"
        # "it's in one of these parcels", "the drill is inside one of the boxes"
        for i, t in enumerate(toks):
            if t.low in _AUXILIARIES and i + 1 < len(toks) and lows[i + 1] in _HOLDER_PREPOSITIONS:
                rest = toks[i + 1 : i + 2]
            elif t.low in _PACK_VERBS:
                rest = toks[i + 1 : i + 9]
            else:
                continue
            into = next((k for k, r in enumerate(rest) if r.low in _PACK_PREPOSITIONS), None)
            if into is None:
                continue
            where = _phrase_at(toks, i + 2 + into, hits)
            target = where.hit.concept if where.hit is not None else None
            if where.kind == "noun" and (
                target in goal.kinds or toks[where.head].norm == goal.head
            ):
                content_of(_Phrase((i,), None, "pronoun"), False, "in")
                break
    return out


_SPATIAL = tuple(
    sorted(
        {
            tuple(p.split())
            for p in _w(
                "on, onto, atop, on top of, by, beside, next to, near, close to, under, "
                "underneath, below, behind, in front of, at, against, alongside"
            )
        },
        key=lambda p: (-len(p), p),
    )
)
_NOT_LANDMARKS = frozenset(
    _w(
        "room, office, kitchen, lab, laboratory, hallway, corridor, floor, ground, area, "
        "building, garage, yard, garden, lobby, site, field, place, space, corner, wall, "
        "ceiling, side, end, top, bottom, left, right, front, back, way, level, storey, "
        "morning, afternoon, evening, night, moment, minute, time, sun, shade, foot, hand"
    )
)


def _relations(
    toks: list[_Tok], hits: dict[int, NounHit], goal: _Goal, soft_sent: set[int]
) -> list[Requirement]:
    """Landmarks the goal is placed by in its sentence ("the mug on the grey shelf, next to
    the kettle"): an inspection must see them around the target. Rooms, floors and other
    places are not landmarks a camera sees beside a thing."""
    if goal.phrase is None:
        return []
    lows = [t.low for t in toks]
    sentence = toks[goal.phrase.head].sentence
    out: list[Requirement] = []
    i = goal.phrase.head + 1
    while i < len(toks) and toks[i].sentence == sentence:
        prep = next((p for p in _SPATIAL if tuple(lows[i : i + len(p)]) == p), None)
        if prep is None:
            i += 1
            continue
        ph = _phrase_at(toks, i + len(prep), hits)
        i += len(prep)
        if ph.kind != "noun" or ph.head in goal.span:
            continue
        head = toks[ph.head]
        concept = ph.hit.concept if ph.hit is not None else None
        if head.norm in _NOT_LANDMARKS or concept in goal.kinds or _is_proper(head):
            continue
        names = (concept, *OBJECTS.get(concept, ())) if concept else (head.norm,)
        start = ph.hit.index if ph.hit is not None else ph.head
        detail = tuple(
            toks[k].norm
            for k in ph.tokens
            if k < start and toks[k].low not in _STOP and not toks[k].low.endswith("'s")
        )
        name = " ".join([*detail, ph.hit.phrase if ph.hit is not None else head.norm])
        if any(r.name == name for r in out):
            continue
        out.append(
            Requirement(
                kind="relation",
                name=name,
                label=f"{' '.join(prep)} the {name}",
                positive=names,
                question="What is it standing on, and what is right next to it?",
                soft=sentence in soft_sent,
                detail=detail,
            )
        )
    return out


_NOT_OWNERS = frozenset(
    _w("today's, tomorrow's, yesterday's, someone's, somebody's, everyone's, nobody's, one's")
)


def _owner(toks: list[_Tok], goal: _Goal) -> tuple[str | None, set[int]]:
    """Whose the goal is, when a name says so ("TOMAS's toolbox", "the helmet that
    belongs to Marta"): the name must show on it. Returns the name and its tokens."""
    if goal.phrase is not None:
        for k in goal.phrase.tokens:
            t = toks[k]
            if t.low.endswith("'s") and t.text[:1].isupper() and t.low not in _NOT_OWNERS:
                base = t.text[:-2]
                if base.lower() not in _STOP and concept_of(base.lower()) is None:
                    return base, {k}
    lows = [t.low for t in toks]
    for i in range(len(toks) - 2):
        if tuple(lows[i : i + 2]) in (("belongs", "to"), ("belonging", "to"), ("owned", "by")):
            t = toks[i + 2]
            if t.text[:1].isupper() and t.low not in _STOP:
                return t.text, {i + 2}
    return None, set()


def _material(toks: list[_Tok], soft_sent: set[int]) -> Requirement | None:
    """What a bin must take for the thing to be thrown away ("this plastic bottle")."""
    family = None
    for t in toks:
        for fam, names in MATERIALS.items():
            if t.low in names and t.low not in ("can", "cans", "card", "pet", "tub", "tubs"):
                family = fam
                break
        family = family or ITEM_MATERIAL.get(t.norm)
        if family:
            break
    if family is None:
        return None
    counter = [w for f, ws in MATERIALS.items() if f != family for w in ws if w not in ("tub",)]
    return Requirement(
        kind="material",
        name=family,
        label=f"that takes {family} waste",
        positive=MATERIALS[family],
        counter=tuple(dict.fromkeys([*counter, *GENERAL_WASTE])),
        question="What does its label say it is for (which kind of waste or recycling)?",
    )


def parse_task(task: str) -> Intent:
    """Read a task in natural language into an :class:`Intent` (deterministic)."""
    toks = _task_tokens(task)
    norms = [t.norm for t in toks]
    hits = _noun_hits(norms)
    soft_sent = _soft_sentences(toks)
    surname, name_idx = _names(toks)
    written = _written_text(task)
    skip = name_idx | {i for i, t in enumerate(toks) if t.low in written}
    goal = _read_goal(toks, hits, skip)
    owner, owner_idx = _owner(toks, goal)
    skip |= owner_idx
    noun_idx = {k for h in hits.values() for k in range(h.index, h.index + h.length)}

    identity: list[str] = []
    for k in goal.kinds:
        identity.extend([k, *OBJECTS.get(k, ())])
    identity.append(goal.head)
    related: list[str] = []
    for k in goal.kinds:
        related.extend(b for b in BROADER.get(k, ()) if b not in identity)

    def sentence_of(index: int) -> int:
        return toks[index].sentence if 0 <= index < len(toks) else 0

    reqs: list[Requirement] = []
    # the goal noun itself asks for nothing ("hazmat suit"); its modifiers may ("hazardous")
    head_span: set[int] = set()
    if goal.phrase is not None and goal.phrase.tokens:
        ph = goal.phrase
        head_span = set(range(ph.start, ph.hit.index + ph.hit.length)) if ph.hit else {ph.head}
    scope = {goal.function.name} if goal.function else set()
    scope |= set(goal.kinds)
    for ev in EVIDENCE.values():
        if ev.scope and not scope & set(ev.scope):
            continue
        at = -1
        for trig in ev.triggers:
            i = find_phrase(norms, trig)
            while i >= 0 and i in head_span:
                i = find_phrase(norms, trig, i + 1)
            if i >= 0 and (at < 0 or i < at):
                at = i
        if ev.name == "surface" and at < 0:
            comp = next(
                (
                    h
                    for h in hits.values()
                    if h.concept in SURFACE_COMPLEMENTS and h.index not in goal.span
                ),
                None,
            )
            if comp is not None:
                at = comp.index
        if at < 0:
            continue
        implied = (
            (ev.name == "surface" and any(k in SURFACE_KINDS for k in goal.kinds))
            or (ev.name == "wheels" and any(k in WHEELED_KINDS for k in goal.kinds))
            or ev.name in IMPLIED_EVIDENCE
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

    if surname:
        title = next(toks[i].text for i in sorted(name_idx))
        reqs.append(
            Requirement(
                kind="name",
                name=surname,
                label=f"addressed to {title}. {surname}",
                positive=(surname,),
                counter=(),
                question="Whose name is on its label?",
                soft=sentence_of(min(name_idx)) in soft_sent,
            )
        )
    if owner and not surname:
        reqs.append(
            Requirement(
                kind="name",
                name=owner,
                label=f"belonging to {owner}",
                positive=(owner,),
                question="Whose name is on it?",
            )
        )
    brand = goal.brand or _brand(toks, noun_idx | skip)
    if brand:
        at = next((i for i, t in enumerate(toks) if t.text == brand.split()[0]), 0)
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
    goal_noun = {toks[k].norm for k in goal.span}
    for i, t in enumerate(toks):
        fam = colour_family(t.low)
        if not fam or any(r.kind == "colour" and r.name == fam for r in reqs):
            continue
        # a colour of something else ("next to the red door") says nothing about the goal
        nxt = _phrase_at(toks, i, hits)
        other = nxt.hit is not None and nxt.hit.concept not in goal.kinds
        other = other and nxt.hit.concept not in CARRIERS and not goal_noun & {toks[nxt.head].norm}
        if other and nxt.hit is not None and nxt.hit.concept not in OCCLUDERS:
            continue
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
    if goal.phrase is not None:
        asked = [trig for r in reqs if r.kind == "evidence" for trig in EVIDENCE[r.name].triggers]
        desc = [  # "hazardous" drum: the hazard requirement says it already
            t
            for t in _descriptors(toks, goal.phrase, skip)
            if not any(find_phrase([t.norm], trig) >= 0 for trig in asked)
        ]
        if desc:
            names = tuple(t.norm for t in desc)
            reqs.append(
                Requirement(
                    kind="descriptor",
                    name=" ".join(names),
                    label="",
                    positive=names,
                    question="",
                    implied=True,
                )
            )
    reqs.extend(_contents(toks, hits, goal, reqs, soft_sent))
    relations = _relations(toks, hits, goal, soft_sent)
    reqs.extend(relations)
    if goal.phrase is None and _request(toks, hits).packed is not None:
        packed = _request(toks, hits).packed
        reqs.append(_content_requirement(toks, packed, False, lead="holding"))
    if "bin" in goal.kinds:
        material = _material(toks, soft_sent)
        if material is not None:
            reqs.append(material)
    queries = list(dict.fromkeys(q for q in goal.queries if q))[:5]
    return Intent(
        task=task,
        head=goal.head,
        kinds=goal.kinds,
        function=goal.function.name if goal.function else None,
        purpose=goal.function.purpose if goal.function else "",
        requirements=tuple(reqs),
        queries=tuple(queries),
        outdoor=any(t.low in OUTDOOR_WORDS for t in toks),
        identity=tuple(dict.fromkeys(identity)),
        related=tuple(dict.fromkeys(related)),
        # the landmarks it stands by are the first places to look
        places=tuple(dict.fromkeys([*(r.name for r in relations), *goal.places])),
        unknown_head=goal.unknown,
    )


def leading_noun(text: str) -> tuple[str | None, NounHit | None]:
    """The head word (singular) of the first noun phrase of ``text`` and its lexicon noun,
    if known: 'blue tarp draped over a box' -> ('tarp', tarp); 'black crate lid' -> lid."""
    toks = _task_tokens(text)
    if not toks:
        return None, None
    hits = _noun_hits([t.norm for t in toks])
    for i in range(len(toks)):
        ph = _phrase_at(toks, i, hits)
        if ph.kind == "noun":
            return toks[ph.head].norm, ph.hit
        if ph.kind != "empty":
            return None, None
    return None, None
