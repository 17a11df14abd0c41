"""Generic phrases whose embeddings span the subspace kept when features are reduced.

The voxel map stores ``feature_dim`` (default 64) values per voxel; text and camera
models emit 384-768. :class:`mapping.encoders.SubspaceProjection` keeps the directions
in which the model's embeddings of everyday object, material and place words vary
most: on MiniLM this preserves the similarity *ranking* of object phrases far better
than a random projection of the same size (measured: barrel vs "steel drum" / "fire
extinguisher" / "green tarp" keep their order at 64 dims, a random 64-d projection
shuffles them). The list is generic on purpose: it must not be tuned to any scenario.
"""

from __future__ import annotations

NOUNS = (
    "barrel drum bin can bucket box crate pallet tarp sheet cover cone sign pole post fence "
    "gate door window wall floor ground grass gravel sand dirt road path stairs ramp ladder "
    "shelf rack table desk chair bench sofa bed cabinet drawer locker cart trolley wagon truck "
    "car bicycle forklift tire wheel pipe hose cable wire rope chain tank cylinder canister "
    "bottle jar cup mug bowl plate pan pot kettle lamp light switch valve pump engine "
    "generator machine tool hammer wrench screwdriver drill saw knife scissors tape paint "
    "brush bag backpack suitcase purse wallet phone laptop computer monitor screen keyboard "
    "printer camera radio speaker clock book paper folder envelope package parcel sack "
    "basket tray helmet vest glove boot shoe jacket shirt hat mask goggles extinguisher "
    "alarm sensor antenna panel board plank beam brick block stone rock boulder log branch "
    "tree bush plant flower vase statue person dog cat robot drone container dumpster trash "
    "garbage shovel rake broom mop sink toilet mirror towel curtain rug carpet pillow "
    "blanket fan heater radiator vent duct column pillar roof ceiling tile puddle mud snow "
    "water oil smoke fire label sticker poster toolbox workbench"
).split()

ATTRIBUTES = (
    "red orange yellow green blue purple black white grey brown silver rusty metal steel "
    "plastic wooden cardboard concrete glass rubber"
).split()

GENERIC = ("object", "things", "stuff", "surface", "background", "room", "area", "place")


def reduction_phrases() -> tuple[str, ...]:
    """Nouns, attributes, generic words and two attribute-noun pairs per noun.

    Deterministic: noun ``k`` is paired with attributes ``k`` and ``7k + 3`` (mod the
    attribute count), so every attribute appears with many nouns.
    """
    pairs = []
    n_attr = len(ATTRIBUTES)
    for k, noun in enumerate(NOUNS):
        for a in sorted({k % n_attr, (7 * k + 3) % n_attr}):
            pairs.append(f"{ATTRIBUTES[a]} {noun}")
    return tuple(dict.fromkeys([*NOUNS, *ATTRIBUTES, *GENERIC, *pairs]))
