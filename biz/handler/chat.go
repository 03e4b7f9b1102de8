package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/protocol/consts"
	"github.com/cloudwego/hertz/pkg/protocol/sse"
	"github.com/google/uuid"

	"github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/biz/run"
)

// decodeChat validates a chat request before any byte of the stream is written: a bad request gets a 4xx JSON
// error, never an empty 200 stream.
func (h *Handlers) decodeChat(c *app.RequestContext) (run.Request, int, *model.FieldError) {
	body := c.Request.Body()
	if int64(len(body)) > h.opts.MaxBodyBytes {
		return run.Request{}, consts.StatusRequestEntityTooLarge, &model.FieldError{Field: "", Message: fmt.Sprintf("request body is larger than %d bytes", h.opts.MaxBodyBytes)}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return run.Request{}, consts.StatusBadRequest, &model.FieldError{Message: "request body is empty; send a JSON object with messages"}
	}
	var req model.ChatRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "body"
			}
			return run.Request{}, consts.StatusUnprocessableEntity, &model.FieldError{Field: field, Message: fmt.Sprintf("must be %s, got %s", kindName(te.Type), te.Value)}
		}
		return run.Request{}, consts.StatusBadRequest, &model.FieldError{Message: "malformed JSON: " + err.Error()}
	}
	if dec.More() {
		return run.Request{}, consts.StatusBadRequest, &model.FieldError{Message: "malformed JSON: trailing data after the object"}
	}
	tid := strings.TrimSpace(req.ThreadID)
	fb := ""
	if req.InterruptFeedback != nil {
		fb = strings.ToLower(strings.TrimSpace(*req.InterruptFeedback))
	}
	// A request without new input may attach to the thread's running run or resume an interrupted one.
	noInput := len(req.Messages) == 0 && tid != "" && tid != model.DefaultThreadID && (fb == "resume" || h.runs.Running(tid))
	validate := req.Validate
	if noInput {
		validate = req.ValidateSettings
	}
	settings, err := validate(h.opts.Defaults)
	if err != nil {
		var fe *model.FieldError
		if errors.As(err, &fe) {
			return run.Request{}, consts.StatusUnprocessableEntity, fe
		}
		return run.Request{}, consts.StatusUnprocessableEntity, &model.FieldError{Message: err.Error()}
	}
	if len(req.MCPSettings) > 0 && string(req.MCPSettings) != "null" && string(req.MCPSettings) != "{}" {
		if !h.opts.EnableMCPServerConfiguration {
			return run.Request{}, consts.StatusForbidden, &model.FieldError{Field: "mcp_settings",
				Message: "MCP server configuration is disabled. Set ENABLE_MCP_SERVER_CONFIGURATION=true to enable it."}
		}
		if h.opts.ValidateMCP == nil {
			return run.Request{}, consts.StatusNotImplemented, &model.FieldError{Field: "mcp_settings", Message: "MCP is not available on this server"}
		}
		if err := h.opts.ValidateMCP(req.MCPSettings); err != nil {
			return run.Request{}, consts.StatusUnprocessableEntity, &model.FieldError{Field: "mcp_settings", Message: err.Error()}
		}
		settings.MCPSettings = string(req.MCPSettings)
	}
	if tid == "" || tid == model.DefaultThreadID {
		// deer-flow replaces the default thread with a fresh one: no continuity.
		tid = uuid.NewString()
	}
	after, _ := strconv.ParseInt(string(c.GetHeader("Last-Event-ID")), 10, 64)
	return run.Request{ThreadID: tid, Text: req.UserText(), Feedback: fb, Settings: settings, AttachAfter: after}, 0, nil
}

func (h *Handlers) chatStream(ctx context.Context, c *app.RequestContext) {
	req, status, fe := h.decodeChat(c)
	if fe != nil {
		writeFieldError(c, status, fe.Field, fe.Message)
		return
	}
	st, err := h.runs.Start(ctx, req)
	if err != nil {
		h.runError(c, req.ThreadID, err)
		return
	}
	c.Response.Header.Set("X-Thread-Id", st.ThreadID)
	cancelOnGone := h.opts.CancelOnDisconnect && !st.Attached
	h.stream(ctx, c, st.ThreadID, st.From, cancelOnGone)
}

// runError maps the run manager's refusals to HTTP statuses.
func (h *Handlers) runError(c *app.RequestContext, threadID string, err error) {
	switch {
	case errors.Is(err, run.ErrBusy):
		writeError(c, consts.StatusConflict, fmt.Sprintf("thread %s already has a run in progress; wait for it, attach to it with GET /api/threads/%s/stream, or cancel it", threadID, threadID))
	case errors.Is(err, run.ErrNoPending):
		writeError(c, consts.StatusConflict, fmt.Sprintf("thread %s has no plan review waiting; send the message without interrupt_feedback to start a new research", threadID))
	case errors.Is(err, run.ErrNotResumable):
		writeError(c, consts.StatusConflict, fmt.Sprintf("thread %s has no interrupted run to resume", threadID))
	case errors.Is(err, run.ErrNotRunning):
		writeError(c, consts.StatusConflict, fmt.Sprintf("thread %s has no run in progress", threadID))
	case errors.Is(err, run.ErrNotFound):
		writeError(c, consts.StatusNotFound, fmt.Sprintf("thread %s not found", threadID))
	case errors.Is(err, run.ErrClosed):
		writeError(c, consts.StatusServiceUnavailable, "the server is shutting down; try again in a moment")
	default:
		h.opts.Logger.Error("request failed", "thread_id", threadID, "err", err)
		writeError(c, consts.StatusInternalServerError, "internal error: "+err.Error())
	}
}

// stream writes a thread's events after seq as SSE until the run ends or pauses. Each event carries its sequence
// number as the SSE id, so a client can reconnect with Last-Event-ID and miss nothing.
func (h *Handlers) stream(ctx context.Context, c *app.RequestContext, threadID string, after int64, cancelOnGone bool) {
	c.Response.Header.Set("X-Accel-Buffering", "no")
	c.SetStatusCode(consts.StatusOK)
	w := sse.NewWriter(c)
	rd := h.runs.Follow(threadID, after)
	for {
		nctx, cancel := context.WithTimeout(ctx, h.opts.Heartbeat)
		evs, done, err := rd.Next(nctx)
		cancel()
		for _, ev := range evs {
			if werr := writeEvent(w, ev.Seq, ev.Event); werr != nil {
				h.gone(threadID, cancelOnGone, werr)
				return
			}
		}
		switch {
		case done:
			return
		case err != nil && ctx.Err() != nil:
			h.gone(threadID, cancelOnGone, ctx.Err())
			return
		case err != nil && errors.Is(err, context.DeadlineExceeded):
			if werr := w.WriteKeepAlive(); werr != nil {
				h.gone(threadID, cancelOnGone, werr)
				return
			}
		case err != nil:
			h.opts.Logger.Error("read events", "thread_id", threadID, "err", err)
			if werr := writeEvent(w, 0, model.Event{Type: model.EventError, Data: model.EventData{ThreadID: threadID, Error: "could not read the run's events: " + err.Error()}}); werr != nil {
				h.gone(threadID, cancelOnGone, werr)
			}
			return
		}
	}
}

// gone handles a client that went away: the run goes on (it can be re-attached) unless the operator asked for
// runs to stop with their client.
func (h *Handlers) gone(threadID string, cancelRun bool, cause error) {
	h.opts.Logger.Info("client went away", "thread_id", threadID, "err", cause)
	if cancelRun {
		if err := h.runs.Cancel(threadID); err != nil && !errors.Is(err, run.ErrNotRunning) {
			h.opts.Logger.Warn("cancel run", "thread_id", threadID, "err", err)
		}
	}
}

// writeEvent writes one event as `event: NAME\ndata: JSON\n\n`, JSON on one line with non-ASCII unescaped.
func writeEvent(w *sse.Writer, seq int64, ev model.Event) error {
	id := ""
	if seq > 0 {
		id = strconv.FormatInt(seq, 10)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev.Data); err != nil {
		return w.WriteEvent(id, model.EventError, []byte(`{"error":"Serialization failed"}`))
	}
	return w.WriteEvent(id, ev.Type, bytes.TrimRight(buf.Bytes(), "\n"))
}

// kindName describes a Go type in JSON terms for error messages.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Pointer:
		return kindName(t.Elem())
	default:
		return "an object"
	}
}
