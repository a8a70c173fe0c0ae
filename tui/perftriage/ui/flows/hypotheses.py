"""The hypothesis actions that need a modal: add (``H``), edit, delete
(confirmed), pick evidence, details, and the roofline panel (``G``).

The Hypotheses pane asks for the per-hypothesis ones with a message (a
widget does not push screens); the main screen and the app call these.
Every change is an event through ``Session.emit``; the refresh path shows it.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App

from perftriage.services.gap.model_bytes import ModelBytes
from perftriage.ui.app_context import app_context, refuse_in_replay
from perftriage.core.analysis import roofline
from perftriage.core.model import events as ev
from perftriage.core.view.targets import engine_host
from perftriage.ui.screens.hypothesis_detail import HypothesisDetailScreen
from perftriage.ui.screens.hypothesis_evidence import Candidate, EvidencePickerScreen
from perftriage.ui.screens.hypothesis_form import ConfirmScreen, HypothesisForm, HypothesisFormScreen
from perftriage.ui.screens.roofline import RooflineScreen
from perftriage.services.cockpit import Cockpit
from perftriage.ui.widgets.hypotheses import Dialog, HypothesesPane


class HypothesisFlows:
    def __init__(self, app: App, cockpit: Cockpit,
                 pane: Callable[[], HypothesesPane | None]) -> None:
        self.app = app
        self.cockpit = cockpit
        self.session = cockpit.session
        self._pane = pane


    def _new_hyp_id(self) -> str:
        while True:
            hyp_id = self.session.new_id("h")
            if self.session.state.hypothesis(hyp_id) is None:
                return hyp_id

    def add(self) -> None:
        if refuse_in_replay(self.app, annotation=True):
            return

        def added(value: HypothesisForm | None) -> None:
            if value is None:
                return
            hyp_id = self._new_hyp_id()
            self.session.emit(ev.HypothesisAdded(hyp_id=hyp_id, title=value.title, note=value.note,
                                                 check=value.check, for_s=value.for_s))
            if (pane := self._pane()) is not None:
                pane.select(hyp_id)
                pane.table.focus()

        self.app.push_screen(HypothesisFormScreen("new hypothesis"), added)

    def open(self, dialog: Dialog, hyp_id: str) -> None:
        """What the pane asked for (its ``Requested`` message)."""
        h = self.session.state.hypothesis(hyp_id)
        if h is None:
            return
        if dialog == "details":
            self.app.push_screen(HypothesisDetailScreen(hyp_id))
        elif dialog == "edit":
            self.app.push_screen(
                HypothesisFormScreen(f"edit hypothesis {hyp_id}", h.title, h.note, h.check,
                                     h.for_s, h.scope),
                lambda value: self._edited(hyp_id, value),
            )
        elif dialog == "delete":
            self.app.push_screen(ConfirmScreen(f"Delete hypothesis “{h.title}”?"),
                                 lambda yes: self._deleted(hyp_id, yes))
        elif dialog == "evidence":
            self.app.push_screen(EvidencePickerScreen(
                self.session.state, h.title, lambda c, stance: self._picked(hyp_id, c, stance)))

    def _edited(self, hyp_id: str, value: HypothesisForm | None) -> None:
        h = self.session.state.hypothesis(hyp_id)
        if value is None or h is None or value == (h.title, h.note, h.check, h.for_s):
            return
        title, note, check, for_s = value
        self.session.emit(ev.HypothesisUpdated(
            hyp_id=hyp_id,
            title=title if title != h.title else None,
            note=note if note != h.note else None,
            check=check if check != h.check else None,
            for_s=for_s if for_s != h.for_s else None,
        ))
        if (pane := self._pane()) is not None:
            pane.select(hyp_id)

    def _deleted(self, hyp_id: str, yes: bool | None) -> None:
        h = self.session.state.hypothesis(hyp_id)
        if yes and h is not None:
            self.session.emit(ev.HypothesisDeleted(hyp_id=hyp_id))
            self.app.notify(f"deleted: {h.title}")

    def _picked(self, hyp_id: str, c: Candidate, stance: ev.Stance) -> None:
        h = self.session.state.hypothesis(hyp_id)
        pane = self._pane()
        if h is not None and pane is not None:
            pane.link_evidence(h, c.ref_kind, c.ref_id, stance, c.summary)

    def roofline(self, engine: ModelBytes | None = None, host: str | None = None) -> None:
        """The gap form; ``engine``: the bytes the engine on ``host`` says a
        step moves (the Triage view's gap lead read them), prefilled."""
        def computed(value: tuple[roofline.RooflineResult, dict,
                                  tuple[str | None, float | None]] | None) -> None:
            if value is None:
                return
            r, inputs, (measured_from, measured_batch) = value
            self.session.emit(ev.GapComputed(
                floor_ms=r.floor_ms, ceiling_tps=r.ceiling_tps,
                bandwidth_gbs_total=r.bandwidth_gbs_total, measured_ms=r.measured_ms,
                gap=r.gap, efficiency_pct=r.efficiency_pct, inputs=inputs,
                measured_from=measured_from if r.measured_ms is not None else None,
                measured_batch=measured_batch if r.measured_ms is not None else None,
            ))
            self.app.notify(f"gap recorded: {roofline.summary_line(r)}")

        read_only = not self.session.mode.annotations
        # the live gap of the server's host while a [[servers]] profile runs, else the selected one
        target = app_context(self.app).probe_target
        names = target.names()
        found, server = engine_host(self.session.state, names, target.selected_host(names))
        why = server.why if server else ""
        if host is not None and host != found:
            found, why = host, "the finding's host"
        self.app.push_screen(RooflineScreen(self.session.state, read_only=read_only,
                                            servers=self.cockpit.config.servers, host=found,
                                            host_why=why, engine=engine), computed)
