"""Typed file formats: every file the stages exchange has a model and an exported JSON Schema."""

from agenteval.schema.corpus import AdversarialDocument, Document, Fact, Manifest
from agenteval.schema.scenario import GroundTruth, IndexDocument, Scenario, Setup, Turn
from agenteval.schema.scorecard import Scorecard
from agenteval.schema.transcript import ToolCall, Transcript, TranscriptTurn
from agenteval.schema.verdict import TurnVerdict, Verdict

__all__ = [
    "AdversarialDocument",
    "Document",
    "Fact",
    "GroundTruth",
    "IndexDocument",
    "Manifest",
    "Scenario",
    "Scorecard",
    "Setup",
    "ToolCall",
    "Transcript",
    "TranscriptTurn",
    "Turn",
    "TurnVerdict",
    "Verdict",
]
