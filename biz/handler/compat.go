package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	einomodel "github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/protocol/consts"
	"github.com/cloudwego/hertz/pkg/protocol/sse"
	"github.com/cloudwego/hertz/pkg/route"
)

// ChatModels hands out chat models by role ("basic", "reasoning", ...). The app's model registry satisfies it.
type ChatModels interface {
	Chat(role string) einomodel.ToolCallingChatModel
}

// MCPMetadataFunc connects to the MCP server described by body (deer-flow's metadata request) and returns the
// response object: the request echoed plus `tools`. A non-zero status is used for the reply; on error it should
// be a 4xx/5xx (0 means 500).
type MCPMetadataFunc func(ctx context.Context, body json.RawMessage) (any, int, error)

// compatRole is the model role the small helper endpoints use, as deer-flow does.
const compatRole = "basic"

// maxUploadBytes is deer-flow's limit for RAG uploads.
const maxUploadBytes = 10 << 20

// registerCompat mounts the endpoints the deer-flow web client calls besides the chat stream.
func (h *Handlers) registerCompat(api *route.RouterGroup) {
	api.GET("/rag/config", h.ragConfig)
	api.GET("/rag/resources", h.ragResources)
	api.POST("/rag/upload", h.ragUpload)
	api.POST("/prompt/enhance", h.promptEnhance)
	api.POST("/prose/generate", h.proseGenerate)
	api.POST("/report/evaluate", h.reportEvaluate)
	api.POST("/podcast/generate", h.notAvailable("content", "Podcast generation"))
	api.POST("/ppt/generate", h.notAvailable("content", "PPT generation"))
	api.POST("/tts", h.notAvailable("text", "Text-to-speech"))
	api.POST("/mcp/server/metadata", h.mcpMetadata)
}

func (h *Handlers) ragConfig(_ context.Context, c *app.RequestContext) {
	writeJSON(c, consts.StatusOK, map[string]any{"provider": nil})
}

func (h *Handlers) ragResources(ctx context.Context, c *app.RequestContext) {
	q := ragQuery(string(c.Request.URI().QueryString()))
	h.opts.Logger.DebugContext(ctx, "rag resources requested without a provider", "query", q)
	writeJSON(c, consts.StatusOK, map[string]any{"resources": []any{}})
}

// ragQuery extracts `query` from a raw query string the web client built without URL-encoding. Everything after
// "query=" belongs to the value, because an unencoded "&" in the user's text must not cut it short. Only valid
// %XX escapes are decoded; "+" stays literal since browsers encode spaces as %20.
func ragQuery(raw string) string {
	var v string
	switch {
	case strings.HasPrefix(raw, "query="):
		v = raw[len("query="):]
	default:
		i := strings.Index(raw, "&query=")
		if i < 0 {
			return ""
		}
		v = raw[i+len("&query="):]
	}
	return lenientUnescape(v)
}

func lenientUnescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// ragUpload validates like deer-flow so the settings tab shows the same messages, then reports that there is no
// provider to store the file in.
func (h *Handlers) ragUpload(_ context.Context, c *app.RequestContext) {
	fh, err := c.FormFile("file")
	if err != nil || fh == nil {
		writeFieldError(c, consts.StatusBadRequest, "file", "send the document as multipart/form-data in a field named file")
		return
	}
	name := path.Base(strings.ReplaceAll(fh.Filename, "\\", "/"))
	ext := strings.ToLower(path.Ext(name))
	if ext != ".md" && ext != ".txt" {
		writeFieldError(c, consts.StatusBadRequest, "file", fmt.Sprintf("%q is not supported; upload a .md or .txt file", name))
		return
	}
	if fh.Size > maxUploadBytes {
		writeFieldError(c, consts.StatusRequestEntityTooLarge, "file", fmt.Sprintf("%q is larger than 10 MiB", name))
		return
	}
	if fh.Size == 0 {
		writeFieldError(c, consts.StatusBadRequest, "file", fmt.Sprintf("%q is empty", name))
		return
	}
	writeError(c, consts.StatusNotImplemented, "No RAG provider is configured on this server, so documents cannot be uploaded.")
}

// decodeJSON reads the body into dst and answers the error itself: 413 too large, 400 empty or malformed,
// 422 wrong field type.
func (h *Handlers) decodeJSON(c *app.RequestContext, dst any) bool {
	body := c.Request.Body()
	if int64(len(body)) > h.opts.MaxBodyBytes {
		writeError(c, consts.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", h.opts.MaxBodyBytes))
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		writeError(c, consts.StatusBadRequest, "request body is empty; send a JSON object")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "body"
			}
			writeFieldError(c, consts.StatusUnprocessableEntity, field, fmt.Sprintf("must be %s, got %s", kindName(te.Type), te.Value))
			return false
		}
		writeError(c, consts.StatusBadRequest, "malformed JSON: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(c, consts.StatusBadRequest, "malformed JSON: trailing data after the object")
		return false
	}
	return true
}

// writeJSON keeps non-ASCII and "<>&" readable, as report text often contains them.
func writeJSON(c *app.RequestContext, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeError(c, consts.StatusInternalServerError, "Internal Server Error")
		return
	}
	c.Data(status, "application/json; charset=utf-8", bytes.TrimRight(buf.Bytes(), "\n"))
}

// chatModel returns the helper endpoints' model, or answers 503 when none is wired.
func (h *Handlers) chatModel(c *app.RequestContext) (einomodel.ToolCallingChatModel, bool) {
	if h.opts.LLM != nil {
		if m := h.opts.LLM.Chat(compatRole); m != nil {
			return m, true
		}
	}
	writeError(c, consts.StatusServiceUnavailable, "no language model is configured on this server")
	return nil, false
}

// reportStyleHints maps deer-flow's report styles to a framing hint for the enhance prompt.
var reportStyleHints = map[string]string{
	"academic":             "a rigorous scholarly inquiry: precise definitions, the state of evidence, methods and open questions",
	"popular_science":      "an engaging explanation for curious non-specialists: core concepts, concrete examples and why it matters",
	"news":                 "a factual news angle: who, what, when, where and why, and the latest developments",
	"social_media":         "a short, shareable angle: the most striking facts and one clear takeaway",
	"strategic_investment": "an investment and strategy angle: market size, key players, drivers, risks and scenarios",
}

func normalizeStyle(s, fallback string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if _, ok := reportStyleHints[s]; ok {
		return s
	}
	return fallback
}

const enhanceSystemPrompt = `You rewrite a user's research request into a clearer, more specific prompt for a research assistant that searches the web and writes a report.

- Keep the user's intent, subject and constraints. Do not answer the question and do not invent facts, figures or sources.
- Make the request specific: state the scope, the time frame if one matters, the aspects worth covering and what the report should deliver.
- Frame it for this report style: %s.
- Use the additional context only to disambiguate the request.
- Write in the same language as the user's prompt.
- Reply with the rewritten prompt only: no preface, no quotes, no headings, at most about 150 words.`

type enhanceRequest struct {
	Prompt      *string `json:"prompt"`
	Context     string  `json:"context"`
	ReportStyle string  `json:"report_style"`
}

func (h *Handlers) promptEnhance(ctx context.Context, c *app.RequestContext) {
	var req enhanceRequest
	if !h.decodeJSON(c, &req) {
		return
	}
	if req.Prompt == nil || strings.TrimSpace(*req.Prompt) == "" {
		writeFieldError(c, consts.StatusUnprocessableEntity, "prompt", "is required")
		return
	}
	m, ok := h.chatModel(c)
	if !ok {
		return
	}
	style := normalizeStyle(req.ReportStyle, "academic")
	user := "Prompt:\n" + strings.TrimSpace(*req.Prompt)
	if ctxText := strings.TrimSpace(req.Context); ctxText != "" {
		user += "\n\nAdditional context:\n" + ctxText
	}
	msgs := []*schema.Message{
		schema.SystemMessage(fmt.Sprintf(enhanceSystemPrompt, reportStyleHints[style])),
		schema.UserMessage(user),
	}
	out, err := m.Generate(ctx, msgs)
	if err != nil {
		h.opts.Logger.WarnContext(ctx, "prompt enhancement failed", "err", err)
		writeError(c, consts.StatusBadGateway, "prompt enhancement failed: the language model call failed: "+err.Error())
		return
	}
	result := cleanEnhanced(out.Content)
	if result == "" {
		// The client would fall back to the original anyway; answering it keeps the contract simple.
		result = strings.TrimSpace(*req.Prompt)
	}
	writeJSON(c, consts.StatusOK, map[string]string{"result": result})
}

// cleanEnhanced removes wrappers models add despite instructions: code fences, quotes and a leading label.
func cleanEnhanced(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") && strings.HasSuffix(s, "```") && len(s) >= 6 {
		inner := s[3 : len(s)-3]
		// A word glued to the opening fence is a language tag, not text.
		if i := strings.IndexByte(inner, '\n'); i > 0 && !strings.ContainsAny(inner[:i], " \t") {
			inner = inner[i+1:]
		}
		s = strings.TrimSpace(inner)
	}
	for _, label := range []string{"enhanced prompt:", "rewritten prompt:", "prompt:", "增强后的提示：", "改写后的提示："} {
		if len(s) >= len(label) && strings.EqualFold(s[:len(label)], label) {
			s = strings.TrimSpace(s[len(label):])
			break
		}
	}
	for _, q := range [][2]string{{`"`, `"`}, {"“", "”"}, {"「", "」"}} {
		if strings.HasPrefix(s, q[0]) && strings.HasSuffix(s, q[1]) && len(s) > len(q[0])+len(q[1]) {
			s = strings.TrimSpace(s[len(q[0]) : len(s)-len(q[1])])
		}
	}
	return s
}

// proseInstructions are the per-option system prompts of the report editor's AI menu.
var proseInstructions = map[string]string{
	"continue": "Continue the text the user gives you. Write the next one to three sentences so that they follow naturally from the end of the text. Do not repeat the given text.",
	"improve":  "Improve the writing of the text the user gives you: clearer wording, better flow and correct grammar, with the same meaning and roughly the same length.",
	"shorter":  "Shorten the text the user gives you to about half its length, keeping the key facts and the meaning.",
	"longer":   "Expand the text the user gives you with useful detail, explanation or examples, to about twice its length, without inventing facts.",
	"fix":      "Fix spelling, grammar and punctuation in the text the user gives you. Change nothing else.",
	"zap":      "Apply the user's instruction to the text the user gives you.",
}

const proseRules = "\n\nReply with the resulting text only, in the language of the given text. Markdown is allowed. No preface, no explanation."

type proseRequest struct {
	Prompt  *string `json:"prompt"`
	Option  string  `json:"option"`
	Command string  `json:"command"`
}

func (h *Handlers) proseGenerate(ctx context.Context, c *app.RequestContext) {
	var req proseRequest
	if !h.decodeJSON(c, &req) {
		return
	}
	if req.Prompt == nil || strings.TrimSpace(*req.Prompt) == "" {
		writeFieldError(c, consts.StatusUnprocessableEntity, "prompt", "is required")
		return
	}
	option := strings.ToLower(strings.TrimSpace(req.Option))
	instr, known := proseInstructions[option]
	if !known {
		writeFieldError(c, consts.StatusUnprocessableEntity, "option", "must be one of continue, improve, shorter, longer, fix, zap")
		return
	}
	command := strings.TrimSpace(req.Command)
	if option == "zap" && command == "" {
		writeFieldError(c, consts.StatusUnprocessableEntity, "command", "is required with option zap")
		return
	}
	m, ok := h.chatModel(c)
	if !ok {
		return
	}
	user := "Text:\n" + *req.Prompt
	if option == "zap" {
		user = "Instruction:\n" + command + "\n\n" + user
	}
	msgs := []*schema.Message{schema.SystemMessage(instr + proseRules), schema.UserMessage(user)}
	sr, err := m.Stream(ctx, msgs)
	if err != nil {
		h.opts.Logger.WarnContext(ctx, "prose generation failed", "err", err)
		writeError(c, consts.StatusBadGateway, "prose generation failed: the language model call failed: "+err.Error())
		return
	}
	defer sr.Close()
	// Wait for the first text before committing the 200, so that a provider failure still gets a JSON error.
	first, err := firstText(sr)
	if err != nil {
		h.opts.Logger.WarnContext(ctx, "prose generation failed", "err", err)
		writeError(c, consts.StatusBadGateway, "prose generation failed: the language model call failed: "+err.Error())
		return
	}
	c.Response.Header.Set("X-Accel-Buffering", "no")
	c.SetStatusCode(consts.StatusOK)
	w := sse.NewWriter(c)
	if first == "" {
		return
	}
	if err := writeProseToken(w, first); err != nil {
		h.opts.Logger.InfoContext(ctx, "client went away", "err", err)
		return
	}
	for {
		msg, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			// Headers are out and this framing has no error event: the client just sees the text end.
			h.opts.Logger.WarnContext(ctx, "prose stream broke", "err", err)
			return
		}
		if msg == nil || msg.Content == "" {
			continue
		}
		if err := writeProseToken(w, msg.Content); err != nil {
			h.opts.Logger.InfoContext(ctx, "client went away", "err", err)
			return
		}
	}
}

// firstText returns the first non-empty content chunk, "" at a clean end of stream, or the stream's error.
func firstText(sr *schema.StreamReader[*schema.Message]) (string, error) {
	for {
		msg, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("read model stream: %w", err)
		}
		if msg != nil && msg.Content != "" {
			return msg.Content, nil
		}
	}
}

// writeProseToken writes `data: <raw text>\n\n` blocks without an event line or JSON, which is what deer-flow's
// editor client parses. That client keeps only the last data line of a block, so a token is split at its line
// breaks and every piece becomes its own block: the text survives and only the line breaks are lost, which is
// the best this framing can carry.
func writeProseToken(w *sse.Writer, token string) error {
	for _, part := range splitProseToken(token) {
		if err := w.WriteEvent("", "", []byte(part)); err != nil {
			return fmt.Errorf("write prose chunk: %w", err)
		}
	}
	return nil
}

func splitProseToken(token string) []string {
	token = strings.ReplaceAll(token, "\r\n", "\n")
	token = strings.ReplaceAll(token, "\r", "\n")
	var parts []string
	for _, p := range strings.Split(token, "\n") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return parts
}

// notAvailable validates a body with a required text field and then answers 501: the web shows `detail`, and a
// 501 tells scripts that retrying will not help.
func (h *Handlers) notAvailable(field, feature string) app.HandlerFunc {
	return func(_ context.Context, c *app.RequestContext) {
		var body map[string]json.RawMessage
		if !h.decodeJSON(c, &body) {
			return
		}
		var s string
		raw, ok := body[field]
		if !ok || string(raw) == "null" {
			writeFieldError(c, consts.StatusUnprocessableEntity, field, "is required")
			return
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			writeFieldError(c, consts.StatusUnprocessableEntity, field, "must be a string")
			return
		}
		if strings.TrimSpace(s) == "" {
			writeFieldError(c, consts.StatusUnprocessableEntity, field, "is required")
			return
		}
		writeError(c, consts.StatusNotImplemented, feature+" is not available in deer-go yet")
	}
}

func (h *Handlers) mcpMetadata(ctx context.Context, c *app.RequestContext) {
	if !h.opts.EnableMCPServerConfiguration {
		writeError(c, consts.StatusForbidden, "MCP server configuration is disabled. Set ENABLE_MCP_SERVER_CONFIGURATION=true to enable it.")
		return
	}
	if h.opts.MCPMetadata == nil {
		writeError(c, consts.StatusNotImplemented, "MCP server metadata is not available in deer-go yet")
		return
	}
	var body map[string]json.RawMessage
	if !h.decodeJSON(c, &body) {
		return
	}
	if body == nil {
		writeError(c, consts.StatusUnprocessableEntity, "body must be a JSON object describing the MCP server")
		return
	}
	raw := json.RawMessage(bytes.Clone(c.Request.Body()))
	res, status, err := h.opts.MCPMetadata(ctx, raw)
	if err != nil {
		if status < 400 {
			status = consts.StatusInternalServerError
		}
		h.opts.Logger.WarnContext(ctx, "MCP server metadata failed", "status", status, "err", err)
		writeError(c, status, err.Error())
		return
	}
	if status == 0 {
		status = consts.StatusOK
	}
	writeJSON(c, status, res)
}
