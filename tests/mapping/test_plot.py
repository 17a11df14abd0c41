"""Top-down relevancy picture."""

from __future__ import annotations

import numpy as np
from matplotlib.image import imread

from mapping.grounding import Grounder
from mapping.plot import plot_relevancy, relevancy_top_down


def test_relevancy_picture_is_written_with_the_hot_spots_on_the_barrels(
    barrel_survey, minilm_encoder, tmp_path
):
    vmap = barrel_survey.voxel_map
    result = Grounder(vmap, minilm_encoder).query("barrel", barrel_survey.start_xy)
    image, origin, res = relevancy_top_down(vmap, result)
    for name in ("barrel_a", "barrel_b", "barrel_c"):
        x, y, _ = barrel_survey.truth[name]
        j, i = int((x - origin[0]) / res), int((y - origin[1]) / res)
        assert np.nanmax(image[i - 3 : i + 4, j - 3 : j + 4]) > 0.8, name
    x, y, _ = barrel_survey.truth["crate"]
    j, i = int((x - origin[0]) / res), int((y - origin[1]) / res)
    assert np.nanmax(image[i - 2 : i + 3, j - 2 : j + 3]) < 0.3

    path = plot_relevancy(
        vmap, result, tmp_path / "out" / "barrel.png", names=[f"c{k}" for k in range(9)], dpi=50
    )
    assert path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = imread(path)
    assert pixels.shape[:2] == (350, 350)
    rgb = pixels[..., :3]
    saturated = (rgb.max(axis=-1) - rgb.min(axis=-1)) > 0.4  # colour, not the grey floor
    assert saturated.mean() > 0.005
