package httpapi

import (
	"net/http"

	"llmserve/decode"
)

// slotJSON is one slot of GET /slots, in llama-server's shape plus the
// state by name and the prompt's progress. Prompts are not shown: the
// scheduler keeps tokens, and a prompt is its client's business.
type slotJSON struct {
	ID                     int           `json:"id"`
	NCtx                   int           `json:"n_ctx"`
	IsProcessing           bool          `json:"is_processing"`
	State                  string        `json:"state"` // idle or processing
	NPromptTokens          int           `json:"n_prompt_tokens"`
	NPromptTokensProcessed int           `json:"n_prompt_tokens_processed"`
	NextToken              nextTokenJSON `json:"next_token"`
}

// nextTokenJSON is llama-server's progress of a slot's generation.
type nextTokenJSON struct {
	HasNextToken bool `json:"has_next_token"`
	NRemain      int  `json:"n_remain"` // tokens left before max_tokens; -1: until the context is full
	NDecoded     int  `json:"n_decoded"`
}

// slots answers GET /slots: every slot as the scheduler's last step left
// it. With ?fail_on_no_slot=1 it answers 503 when no slot is idle, as
// llama-server does; with Config.NoSlots it answers 501.
func (s *Server) slots(w http.ResponseWriter, r *http.Request) {
	if s.cfg.NoSlots {
		writeError(w, &apiError{Status: http.StatusNotImplemented, Type: "not_supported_error",
			Message: "this server does not serve slots: it was started with --no-slots"})
		return
	}
	m, err := s.loaded()
	if err != nil {
		writeError(w, err)
		return
	}
	nCtx := m.Scheduler.ContextSize()
	infos := m.Scheduler.Slots()
	out := make([]slotJSON, 0, len(infos))
	free := false
	for _, in := range infos {
		busy := in.State == decode.SlotProcessing
		free = free || !busy
		remain := -1
		if busy && in.MaxTokens > 0 {
			remain = max(in.MaxTokens-in.Generated, 0)
		}
		out = append(out, slotJSON{
			ID: in.ID, NCtx: nCtx, IsProcessing: busy, State: in.State.String(),
			NPromptTokens: in.PromptTokens, NPromptTokensProcessed: in.PromptProcessed,
			NextToken: nextTokenJSON{HasNextToken: busy, NRemain: remain, NDecoded: in.Generated},
		})
	}
	if !free && r.URL.Query().Get("fail_on_no_slot") == "1" {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Type: "unavailable_error",
			Message: "no slot is idle"})
		return
	}
	writeJSON(w, http.StatusOK, out)
}
