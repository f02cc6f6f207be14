"""The signing options shared by the commands that call bots (``play``, ``health``).

They sign as the arena does (:mod:`referee.wire.signing`): version 2 with one ``v2=`` entry
per secret given, and the version 1 header under the first secret unless ``--no-signature-v1``
(the arena's ``SIGNATURE_V1``).  Several secrets imitate a rotation's grace period, when the
arena signs with the new and the previous secret at once.
"""

from __future__ import annotations

import argparse

from referee.wire.signing import LEGACY_V1_DEFAULT


def add_signing_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--secret",
        help="sign every request with this secret, as the arena does (several, comma-"
        "separated: one v2 signature each, as during a rotation's grace period)",
    )
    ap.add_argument(
        "--no-signature-v1",
        dest="signature_v1",
        action="store_false",
        default=LEGACY_V1_DEFAULT,
        help="send only version 2 signatures (no X-BigTwo-Signature): what the arena "
        "sends once the transition ends",
    )


def signing_of(args: argparse.Namespace) -> tuple[list[bytes], bool]:
    """The secrets (current first) and whether to add version 1, from the parsed options."""
    text = args.secret or ""
    secrets = [part.strip().encode("utf-8") for part in text.split(",") if part.strip()]
    return secrets, bool(args.signature_v1)
