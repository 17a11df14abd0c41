"""The twin's lease service state: one resource ("body"), Spot's sequence-number rules.

A client acquires (or takes) the root lease ``[n]``; its wallet sends ever newer
subleases ``[n, 1], [n, 2] ...`` with each command. Another client taking the lease makes
root ``[n + 1]``, after which every lease of the first client compares OLDER and is
refused (``LeaseUseResult.STATUS_OLDER``). Comparisons use the SDK's own
``bosdyn.client.lease.test_active_lease``.
"""

from __future__ import annotations

import secrets
import threading

from bosdyn.api import lease_pb2
from bosdyn.client.lease import Lease, test_active_lease

BODY = "body"


class LeaseManager:
    """Who holds the body lease, and whether an incoming lease may be used."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.epoch = secrets.token_hex(8)
        self._root_sequence = 0
        self._owner: lease_pb2.LeaseOwner | None = None
        self._root: lease_pb2.Lease | None = None
        self._latest: Lease | None = None  # newest lease seen in use

    @property
    def owner(self) -> lease_pb2.LeaseOwner | None:
        with self._lock:
            return self._owner

    def _new_root(self, owner: lease_pb2.LeaseOwner) -> lease_pb2.Lease:
        self._root_sequence += 1
        lease = lease_pb2.Lease(resource=BODY, epoch=self.epoch, sequence=[self._root_sequence])
        self._root, self._owner, self._latest = lease, owner, Lease(lease)
        return lease

    def acquire(self, resource: str, owner: lease_pb2.LeaseOwner) -> lease_pb2.AcquireLeaseResponse:
        resp = lease_pb2.AcquireLeaseResponse()
        with self._lock:
            if resource != BODY:
                resp.status = resp.STATUS_INVALID_RESOURCE
            elif self._owner is not None:
                resp.status = resp.STATUS_RESOURCE_ALREADY_CLAIMED
                resp.lease_owner.CopyFrom(self._owner)
            else:
                resp.lease.CopyFrom(self._new_root(owner))
                resp.lease_owner.CopyFrom(owner)
                resp.status = resp.STATUS_OK
        return resp

    def take(self, resource: str, owner: lease_pb2.LeaseOwner) -> lease_pb2.TakeLeaseResponse:
        resp = lease_pb2.TakeLeaseResponse()
        with self._lock:
            if resource != BODY:
                resp.status = resp.STATUS_INVALID_RESOURCE
            else:
                resp.lease.CopyFrom(self._new_root(owner))
                resp.lease_owner.CopyFrom(owner)
                resp.status = resp.STATUS_OK
        return resp

    def give_back(self, lease: lease_pb2.Lease) -> int:
        """ReturnLease: a ``ReturnLeaseResponse.Status``."""
        status = lease_pb2.ReturnLeaseResponse
        with self._lock:
            if lease.resource != BODY:
                return status.STATUS_INVALID_RESOURCE
            derived = (Lease.CompareResult.SAME, Lease.CompareResult.SUB_LEASE)
            if (
                self._owner is None
                or self._root is None
                or not Lease.is_valid_proto(lease)
                or Lease(lease).compare(Lease(self._root)) not in derived
            ):
                return status.STATUS_NOT_ACTIVE_LEASE
            self._owner, self._root = None, None
            return status.STATUS_OK

    def use(self, lease: lease_pb2.Lease) -> lease_pb2.LeaseUseResult:
        """May ``lease`` command the robot now? Records it as the newest lease if so."""
        with self._lock:
            return self._use(lease)

    def _use(self, lease: lease_pb2.Lease) -> lease_pb2.LeaseUseResult:
        if self._owner is None or self._latest is None:
            result = lease_pb2.LeaseUseResult(status=lease_pb2.LeaseUseResult.STATUS_REVOKED)
            result.attempted_lease.CopyFrom(lease)
            return result
        result, incoming = test_active_lease(lease, self._latest)
        if result.status == lease_pb2.LeaseUseResult.STATUS_OK and incoming is not None:
            if incoming.compare(self._latest) != Lease.CompareResult.SUPER_LEASE:
                self._latest = incoming
        result.owner.CopyFrom(self._owner)
        return result

    def resources(self) -> list[lease_pb2.LeaseResource]:
        with self._lock:
            res = lease_pb2.LeaseResource(resource=BODY)
            if self._owner is not None and self._root is not None:
                res.lease.CopyFrom(self._root)
                res.lease_owner.CopyFrom(self._owner)
            return [res]
