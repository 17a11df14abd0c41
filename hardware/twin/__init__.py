"""A Spot-API twin: a gRPC server on 127.0.0.1 that the unmodified Spot SDK drives,
backed by the SpotWorld simulator (see ``server.py``)."""

from hardware.twin.faults import Fault, Faults
from hardware.twin.server import SpotTwin, TwinConfig, TwinVLM

__all__ = ["Fault", "Faults", "SpotTwin", "TwinConfig", "TwinVLM"]
