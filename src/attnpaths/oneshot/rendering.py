"""Turning one glyph bitmap into one hand-drawn-looking grayscale instance (Omniglot stand-in, sec-oneshot-data).

An instance is drawn on a supersampled canvas and averaged down to ``image_size x image_size``:

1. the glyph's ink box is centred and scaled so its longer side fills ``glyph_box`` of the image;
2. a random affine map (scale, aspect, rotation, shear, translation) and a smooth random (elastic)
   displacement field are applied, by resampling the bitmap along the inverse map;
3. the stroke thickness is changed by a soft morphological operation: blur, then threshold. A threshold
   below 1/2 grows every stroke (dilation), one above 1/2 thins it (erosion);
4. 2x2 (``supersampling``) block averaging antialiases, and the image is inverted so that the
   background is 1 (white) and ink is 0, as in Omniglot's PNG files.

The font face is chosen by the caller (``datasets``); everything here is font-agnostic.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy import ndimage

from .._optional import require
from .._validation import nonnegative_real, positive_int, positive_real

#: Names of the per-instance distortion parameters, in the order of :func:`sample_distortion`'s output.
DISTORTION_NAMES = ("scale", "aspect", "rotation", "shear", "shift_y", "shift_x", "stroke_threshold")


@dataclass(frozen=True)
class DistortionConfig:
    """Ranges of the per-instance distortions. Lengths are in output pixels or fractions of the image.

    Attributes:
        glyph_box: longer side of the undistorted glyph as a fraction of the image side.
        scale_range: uniform range of an extra overall scale factor.
        aspect_jitter: the x/y scale ratio is ``exp(u)`` with ``u`` uniform in ``[-aspect_jitter, aspect_jitter]``.
        rotation_degrees: rotation uniform in ``[-rotation_degrees, rotation_degrees]``; kept small because
            several alphabets hold rotated copies of one shape as different letters.
        shear: shear factor uniform in ``[-shear, shear]``.
        shift: translation of each axis uniform in ``[-shift, shift]`` (fraction of the image side).
        elastic_amplitude: root-mean-square displacement of the elastic field, in output pixels.
        elastic_smoothness: Gaussian correlation length of the elastic field, in output pixels.
        stroke_blur: blur (Gaussian sigma, output pixels) before the stroke threshold.
        stroke_threshold: uniform range of the threshold; low values give thick strokes.
        supersampling: canvas pixels per output pixel along each axis.
    """

    glyph_box: float = 0.75
    scale_range: tuple[float, float] = (0.85, 1.05)
    aspect_jitter: float = 0.12
    rotation_degrees: float = 12.0
    shear: float = 0.15
    shift: float = 0.06
    elastic_amplitude: float = 0.8
    elastic_smoothness: float = 3.0
    stroke_blur: float = 0.5
    stroke_threshold: tuple[float, float] = (0.2, 0.6)
    supersampling: int = 2

    def __post_init__(self):
        if not 0 < self.glyph_box <= 1:
            raise ValueError(f"glyph_box must be in (0, 1], got {self.glyph_box!r}")
        lo, hi = self.scale_range
        if not 0 < lo <= hi:
            raise ValueError(f"scale_range must satisfy 0 < low <= high, got {self.scale_range!r}")
        lo, hi = self.stroke_threshold
        if not 0 < lo <= hi < 1:
            raise ValueError(f"stroke_threshold must satisfy 0 < low <= high < 1, got {self.stroke_threshold!r}")
        for name in ("aspect_jitter", "rotation_degrees", "shear", "shift", "elastic_amplitude", "stroke_blur"):
            nonnegative_real(getattr(self, name), name)
        positive_real(self.elastic_smoothness, "elastic_smoothness")
        positive_int(self.supersampling, "supersampling")

    def as_dict(self) -> dict:
        """The parameters as a JSON-ready dict (tuples become lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    def scaled(self, factor: float) -> DistortionConfig:
        """The geometric distortions times ``factor``: the deviations of ``scale_range`` from 1, the aspect
        jitter, rotation, shear, shift and elastic amplitude; glyph box, stroke and supersampling unchanged.
        ``factor = 1`` returns this configuration itself (same parameters, same cache key); 0 keeps only
        the font face and the stroke thickness of each instance."""
        if nonnegative_real(factor, "factor") == 1:
            return self
        lo, hi = self.scale_range
        return replace(
            self,
            scale_range=(1 + factor * (lo - 1), 1 + factor * (hi - 1)),
            aspect_jitter=factor * self.aspect_jitter,
            rotation_degrees=factor * self.rotation_degrees,
            shear=factor * self.shear,
            shift=factor * self.shift,
            elastic_amplitude=factor * self.elastic_amplitude,
        )


#: No distortion at all, mid-way stroke threshold (the shape as the font draws it).
IDENTITY_DISTORTION = np.array([1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.5])


def sample_distortion(rng: np.random.Generator, config: DistortionConfig) -> np.ndarray:
    """Draw one instance's distortion parameters.

    Returns:
        float64 ``[7]`` in the order of ``DISTORTION_NAMES`` (rotation in radians, shifts as fractions of
        the image side).
    """
    u = rng.uniform(-1.0, 1.0, size=5)
    return np.array(
        [
            rng.uniform(*config.scale_range),
            np.exp(config.aspect_jitter * u[0]),
            np.deg2rad(config.rotation_degrees) * u[1],
            config.shear * u[2],
            config.shift * u[3],
            config.shift * u[4],
            rng.uniform(*config.stroke_threshold),
        ]
    )


def sample_elastic_field(rng: np.random.Generator, config: DistortionConfig, image_size: int) -> np.ndarray:
    """A smooth random displacement field, normalised to root-mean-square ``elastic_amplitude``.

    Returns:
        float64 ``[2, S, S]`` displacements (rows, columns) in canvas pixels, ``S = image_size * supersampling``.
    """
    ss = config.supersampling
    size = image_size * ss
    noise = rng.standard_normal((2, size, size))
    if config.elastic_amplitude == 0:
        return np.zeros_like(noise)
    smooth = np.stack([ndimage.gaussian_filter(n, config.elastic_smoothness * ss, mode="wrap") for n in noise])
    # Normalise by the field's own RMS so the amplitude means the same for every smoothness.
    rms = np.sqrt(np.mean(np.sum(smooth**2, axis=0)))
    return smooth * (config.elastic_amplitude * ss / rms)


def render_instance(
    bitmap: np.ndarray,
    distortion: np.ndarray,
    field: np.ndarray | None,
    config: DistortionConfig,
    image_size: int = 32,
) -> np.ndarray:
    """Draw one distorted instance of a glyph.

    Args:
        bitmap: ``[h, w]`` glyph coverage in ``[0, 1]``, cropped to its ink (``glyphs.glyph_bitmap``).
        distortion: ``[7]`` parameters (``sample_distortion`` or ``IDENTITY_DISTORTION``).
        field: ``[2, S, S]`` elastic displacements (``sample_elastic_field``) or None for none.
        config: distortion settings (glyph box and supersampling are read from it).
        image_size: side of the output image in pixels.

    Returns:
        float64 ``[image_size, image_size]`` with background 1 and ink 0.
    """
    bitmap = np.asarray(bitmap, dtype=np.float64)
    if bitmap.ndim != 2 or min(bitmap.shape) < 1:
        raise ValueError(f"bitmap must be a non-empty 2-d array, got shape {bitmap.shape}")
    ss = config.supersampling
    size = image_size * ss
    scale, aspect, rotation, shear, shift_y, shift_x, threshold = (float(v) for v in distortion)

    # Forward map of the glyph on the canvas: A = rotation @ shear @ diag(scale_y, scale_x).
    cos, sin = np.cos(rotation), np.sin(rotation)
    forward = (
        np.array([[cos, -sin], [sin, cos]])
        @ np.array([[1.0, shear], [0.0, 1.0]])
        @ np.diag([scale / np.sqrt(aspect), scale * np.sqrt(aspect)])
    )
    inverse = np.linalg.inv(forward)
    # Bitmap pixels per canvas pixel for the undistorted, box-filling glyph.
    pixels_per_canvas = max(bitmap.shape) / (config.glyph_box * size)

    grid = np.mgrid[0:size, 0:size].astype(np.float64)  # [2, S, S] (row, col)
    if field is not None:
        grid = grid + field
    centre = (size - 1) / 2
    grid[0] -= centre + shift_y * size
    grid[1] -= centre + shift_x * size
    source = np.einsum("ij,jrc->irc", inverse, grid) * pixels_per_canvas
    source[0] += (bitmap.shape[0] - 1) / 2
    source[1] += (bitmap.shape[1] - 1) / 2
    coverage = ndimage.map_coordinates(bitmap, source, order=1, mode="constant", cval=0.0)

    if config.stroke_blur > 0:
        coverage = ndimage.gaussian_filter(coverage, config.stroke_blur * ss, mode="constant")
    # A steep ramp around the threshold keeps strokes crisp on the canvas; the block average below
    # then antialiases their edges.
    ink = np.clip((coverage - threshold) / 0.1 + 0.5, 0.0, 1.0)
    ink = ink.reshape(image_size, ss, image_size, ss).mean(axis=(1, 3))
    return 1.0 - ink


def resize_images(images: np.ndarray, size: int) -> np.ndarray:
    """Resize grayscale images with bilinear, antialiased interpolation (PIL), like torchvision's Resize.

    Args:
        images: ``[..., h, w]`` float images.
        size: output side.

    Returns:
        float32 ``[..., size, size]``.
    """
    Image = require("PIL.Image", "tasks")
    images = np.asarray(images, dtype=np.float32)
    flat = images.reshape(-1, *images.shape[-2:])
    out = np.stack(
        [np.asarray(Image.fromarray(im, mode="F").resize((size, size), Image.Resampling.BILINEAR)) for im in flat]
    )
    return out.reshape(*images.shape[:-2], size, size)
