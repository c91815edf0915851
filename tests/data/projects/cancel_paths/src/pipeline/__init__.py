"""Cancellation handlers whose ways out are checked one by one."""

from .workers import drain, poll, retrying
from .streams import chunks
