package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

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
	settings, err := req.Validate(h.opts.Defaults)
	if err != nil {
		var fe *model.FieldError
		if errors.As(err, &fe) {
			return run.Request{}, consts.StatusUnprocessableEntity, fe
		}
		return run.Request{}, consts.StatusUnprocessableEntity, &model.FieldError{Message: err.Error()}
	}
	if len(req.MCPSettings) > 0 && string(req.MCPSettings) != "null" && string(req.MCPSettings) != "{}" {
		return run.Request{}, consts.StatusForbidden, &model.FieldError{Field: "mcp_settings",
			Message: "MCP server configuration is disabled. Set ENABLE_MCP_SERVER_CONFIGURATION=true to enable it."}
	}
	tid := strings.TrimSpace(req.ThreadID)
	if tid == "" || tid == model.DefaultThreadID {
		// deer-flow replaces the default thread with a fresh one: no continuity.
		tid = uuid.NewString()
	}
	fb := ""
	if req.InterruptFeedback != nil {
		fb = strings.ToLower(strings.TrimSpace(*req.InterruptFeedback))
	}
	return run.Request{ThreadID: tid, Text: req.UserText(), Feedback: fb, Settings: settings}, 0, nil
}

func (h *Handlers) chatStream(ctx context.Context, c *app.RequestContext) {
	req, status, fe := h.decodeChat(c)
	if fe != nil {
		writeFieldError(c, status, fe.Field, fe.Message)
		return
	}
	// The run lives as long as the client: Hertz cancels ctx when the connection drops, and a failed write
	// cancels it too.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := h.runs.Start(runCtx, req)
	switch {
	case errors.Is(err, run.ErrBusy):
		writeError(c, consts.StatusConflict, fmt.Sprintf("thread %s already has a run in progress; wait for it to finish", req.ThreadID))
		return
	case errors.Is(err, run.ErrNoPending):
		writeError(c, consts.StatusConflict, fmt.Sprintf("thread %s has no plan review waiting; send the message without interrupt_feedback to start a new research", req.ThreadID))
		return
	case err != nil:
		writeError(c, consts.StatusInternalServerError, err.Error())
		return
	}
	c.Response.Header.Set("X-Accel-Buffering", "no")
	c.Response.Header.Set("X-Thread-Id", req.ThreadID)
	c.SetStatusCode(consts.StatusOK)
	w := sse.NewWriter(c)
	h.pump(runCtx, cancel, st, w)
}

// pump copies the run's events to the client until the run ends. On a write failure the run is cancelled and the
// pump still waits for the run goroutine, so nothing outlives the request.
func (h *Handlers) pump(ctx context.Context, cancel context.CancelFunc, st *run.Stream, w *sse.Writer) {
	defer func() { <-st.Done() }()
	tick := time.NewTicker(h.opts.Heartbeat)
	defer tick.Stop()
	writeOK := true
	for {
		evs, done := st.Drain()
		for _, ev := range evs {
			if !writeOK {
				break
			}
			if err := writeEvent(w, ev); err != nil {
				h.opts.Logger.Info("client went away", "err", err)
				writeOK = false
				cancel()
			}
		}
		if done {
			return
		}
		select {
		case <-st.Wake():
		case <-tick.C:
			if writeOK {
				if err := w.WriteKeepAlive(); err != nil {
					writeOK = false
					cancel()
				}
			}
		case <-ctx.Done():
			// Keep draining until the run notices the cancellation and closes its stream.
			writeOK = false
			<-st.Done()
		}
	}
}

// writeEvent writes one event as `event: NAME\ndata: JSON\n\n`, JSON on one line with non-ASCII unescaped.
func writeEvent(w *sse.Writer, ev model.Event) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev.Data); err != nil {
		return w.WriteEvent("", model.EventError, []byte(`{"error":"Serialization failed"}`))
	}
	return w.WriteEvent("", ev.Type, bytes.TrimRight(buf.Bytes(), "\n"))
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
