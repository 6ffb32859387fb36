"""Flags and enumerations of the NDK interface, with the values of core/include/ndk/ndkpi.h.

Each is built from the binding's tables (one source: the C header); members drop the common
prefix: MrFlag.ALLOW_LOCAL_WRITE is NDK_MR_FLAG_ALLOW_LOCAL_WRITE.
"""

import enum

from . import _core

_tables = _core.constant_tables()

ObjectType = enum.IntEnum("ObjectType", _tables["ObjectType"], module=__name__)
OpType = enum.IntEnum("OpType", _tables["OpType"], module=__name__)
CqNotify = enum.IntEnum("CqNotify", _tables["CqNotify"], module=__name__)
RdmaTechnology = enum.IntEnum("RdmaTechnology", _tables["RdmaTechnology"], module=__name__)
Oid = enum.IntEnum("Oid", _tables["Oid"], module=__name__)
MrFlag = enum.IntFlag("MrFlag", _tables["MrFlag"], module=__name__)
OpFlag = enum.IntFlag("OpFlag", _tables["OpFlag"], module=__name__)
AdapterFlag = enum.IntFlag("AdapterFlag", _tables["AdapterFlag"], module=__name__)

__all__ = ["ObjectType", "OpType", "CqNotify", "RdmaTechnology", "Oid", "MrFlag", "OpFlag",
           "AdapterFlag"]
