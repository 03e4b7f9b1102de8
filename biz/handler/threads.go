package handler

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/protocol/consts"

	"github.com/deer-go/deer-go/biz/run"
)

const (
	defaultPage = 20
	maxPage     = 100
)

// listThreads: GET /api/threads?limit=N&cursor=C, newest first.
func (h *Handlers) listThreads(ctx context.Context, c *app.RequestContext) {
	limit := defaultPage
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			writeFieldError(c, consts.StatusUnprocessableEntity, "limit", "must be an integer between 1 and "+strconv.Itoa(maxPage))
			return
		}
		limit = n
	}
	page, next, err := h.runs.Threads(ctx, c.Query("cursor"), limit)
	if err != nil {
		h.runError(c, "", err)
		return
	}
	if page == nil {
		page = []run.ThreadSummary{}
	}
	c.JSON(consts.StatusOK, map[string]any{"threads": page, "next_cursor": next})
}

func (h *Handlers) getThread(ctx context.Context, c *app.RequestContext) {
	id := c.Param("id")
	v, err := h.runs.Thread(ctx, id)
	if err != nil {
		h.runError(c, id, err)
		return
	}
	c.JSON(consts.StatusOK, v)
}

func (h *Handlers) deleteThread(ctx context.Context, c *app.RequestContext) {
	id := c.Param("id")
	if err := h.runs.Delete(ctx, id); err != nil {
		if errors.Is(err, run.ErrBusy) {
			writeError(c, consts.StatusConflict, "thread "+id+" has a run in progress; cancel it first")
			return
		}
		h.runError(c, id, err)
		return
	}
	c.Status(consts.StatusNoContent)
}

// threadReport: GET /api/threads/{id}/report.md, the final report as a markdown download.
func (h *Handlers) threadReport(ctx context.Context, c *app.RequestContext) {
	id := c.Param("id")
	v, err := h.runs.Thread(ctx, id)
	if err != nil {
		h.runError(c, id, err)
		return
	}
	if strings.TrimSpace(v.Report) == "" {
		writeError(c, consts.StatusNotFound, "thread "+id+" has no report yet")
		return
	}
	c.Response.Header.Set("Content-Disposition", `attachment; filename="`+safeFilename(v.Title)+`.md"`)
	c.Data(consts.StatusOK, "text/markdown; charset=utf-8", []byte(v.Report))
}

// threadStream: GET /api/threads/{id}/stream?after=N (or Last-Event-ID), the events after N, then the live run's,
// until the run ends or pauses.
func (h *Handlers) threadStream(ctx context.Context, c *app.RequestContext) {
	id := c.Param("id")
	after := int64(0)
	raw := c.Query("after")
	if raw == "" {
		raw = string(c.GetHeader("Last-Event-ID"))
	}
	if raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			writeFieldError(c, consts.StatusUnprocessableEntity, "after", "must be a non-negative integer (an event id)")
			return
		}
		after = n
	}
	if _, err := h.runs.Thread(ctx, id); err != nil {
		h.runError(c, id, err)
		return
	}
	h.stream(ctx, c, id, after, false)
}

func (h *Handlers) cancelThread(ctx context.Context, c *app.RequestContext) {
	id := c.Param("id")
	if err := h.runs.Cancel(id); err != nil {
		h.runError(c, id, err)
		return
	}
	c.JSON(consts.StatusOK, map[string]string{"status": "cancelled", "thread_id": id})
}

// safeFilename keeps letters, digits, dashes and underscores of a title for a download name.
func safeFilename(title string) string {
	var b strings.Builder
	for _, r := range title {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
		if b.Len() >= 60 {
			break
		}
	}
	if b.Len() == 0 {
		return "report"
	}
	return b.String()
}
