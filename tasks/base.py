"""The base of every stage's parameter model: strict (unknown keys are errors) and fingerprintable."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def fingerprint_params(self) -> dict:
        """The parameters that determine the stage's output (all of them unless a stage says otherwise)."""
        return self.model_dump(mode="json")
