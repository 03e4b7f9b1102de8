package handler

import (
	"context"
	"strings"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/protocol/consts"
)

// cors answers pre-flights and marks responses for allowed origins only. Credentials are allowed, so the origin
// is echoed, never "*".
func (h *Handlers) cors(ctx context.Context, c *app.RequestContext) {
	origin := string(c.GetHeader("Origin"))
	allowed := origin != "" && h.originAllowed(origin)
	if allowed {
		c.Header("Access-Control-Allow-Origin", origin)
		c.Header("Access-Control-Allow-Credentials", "true")
		c.Header("Vary", "Origin")
	}
	if string(c.Method()) == consts.MethodOptions && len(c.GetHeader("Access-Control-Request-Method")) > 0 {
		if !allowed {
			writeError(c, consts.StatusForbidden, "origin "+origin+" is not allowed; add it to ALLOWED_ORIGINS")
			return
		}
		c.Header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
		reqHeaders := string(c.GetHeader("Access-Control-Request-Headers"))
		if reqHeaders == "" {
			reqHeaders = "content-type, cache-control, last-event-id"
		}
		c.Header("Access-Control-Allow-Headers", reqHeaders)
		c.Header("Access-Control-Max-Age", "600")
		c.AbortWithStatus(consts.StatusNoContent)
		return
	}
	c.Next(ctx)
}

func (h *Handlers) originAllowed(origin string) bool {
	for _, o := range h.opts.AllowedOrigins {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}
