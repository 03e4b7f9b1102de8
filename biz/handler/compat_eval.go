package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/cloudwego/eino/schema"
	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/protocol/consts"

	"github.com/deer-go/deer-go/infra/llm"
)

// styleSections lists, per report style, the sections our reporter is asked to write, in order. The names are
// what the web client shows in sections_found / sections_missing.
var styleSections = map[string][]string{
	"default":              {"title", "key_points", "overview", "detailed_analysis", "references"},
	"academic":             {"title", "key_points", "overview", "detailed_analysis", "survey_notes", "references"},
	"popular_science":      {"title", "key_points", "overview", "detailed_analysis", "references"},
	"news":                 {"title", "key_points", "overview", "detailed_analysis", "references"},
	"social_media":         {"title", "key_points", "references"},
	"strategic_investment": {"title", "key_points", "overview", "detailed_analysis", "risk_assessment", "references"},
}

// styleTargetWords is the length below which the length part of the score shrinks proportionally.
var styleTargetWords = map[string]int{
	"default":              1000,
	"academic":             1500,
	"popular_science":      1000,
	"news":                 600,
	"social_media":         300,
	"strategic_investment": 1500,
}

// sectionKeywords recognise a section from its heading, in English and Chinese (lower-case substrings).
var sectionKeywords = map[string][]string{
	"key_points": {"key point", "key finding", "key fact", "key takeaway", "takeaways", "executive summary",
		"highlights", "tl;dr", "at a glance", "要点", "关键发现", "主要发现", "执行摘要", "核心结论", "速览"},
	"overview":          {"overview", "introduction", "background", "context", "概述", "概览", "简介", "引言", "背景", "导言"},
	"detailed_analysis": {"analysis", "discussion", "in-depth", "in depth", "deep dive", "分析", "讨论", "详解"},
	"survey_notes":      {"survey", "literature", "state of research", "调研笔记", "综述", "研究现状"},
	"risk_assessment":   {"risk", "风险"},
	"references":        {"reference", "sources", "citation", "bibliography", "further reading", "参考", "引用", "来源"},
}

// gradeFloors maps the minimum score to a grade, best first.
var gradeFloors = []struct {
	min   float64
	grade string
}{
	{9.0, "A+"}, {8.5, "A"}, {8.0, "A-"}, {7.5, "B+"}, {7.0, "B"}, {6.5, "B-"},
	{6.0, "C+"}, {5.5, "C"}, {5.0, "C-"}, {4.0, "D"},
}

// llmWeights weigh the LLM's criteria into weighted_score; they sum to 1.
var llmWeights = []struct {
	key    string
	weight float64
}{
	{"factual_accuracy", 0.25}, {"completeness", 0.20}, {"coherence", 0.15},
	{"relevance", 0.15}, {"citation_quality", 0.15}, {"writing_quality", 0.10},
}

var (
	reHeading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	reBold    = regexp.MustCompile(`^\*\*([^*]+?)\*\*\s*[:：]?\s*$`)
	reImage   = regexp.MustCompile(`!\[[^\]]*\]\([^)]*\)`)
	reHTMLImg = regexp.MustCompile(`(?i)<img\b[^>]*>`)
	reLink    = regexp.MustCompile(`\[([^\]]*)\]\(\s*<?(https?://[^)\s>]+)>?[^)]*\)`)
	reBareURL = regexp.MustCompile(`https?://\S+`)
	reHTMLTag = regexp.MustCompile(`<[^>]+>`)
	reTable   = regexp.MustCompile(`^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$`)
)

// reportMetrics is the LLM-free part of an evaluation, field names as the web client reads them.
type reportMetrics struct {
	WordCount            int      `json:"word_count"`
	CitationCount        int      `json:"citation_count"`
	UniqueSources        int      `json:"unique_sources"`
	ImageCount           int      `json:"image_count"`
	SectionCount         int      `json:"section_count"`
	SectionCoverageScore float64  `json:"section_coverage_score"`
	SectionsFound        []string `json:"sections_found"`
	SectionsMissing      []string `json:"sections_missing"`
	HasTitle             bool     `json:"has_title"`
	HasKeyPoints         bool     `json:"has_key_points"`
	HasOverview          bool     `json:"has_overview"`
	HasCitationsSection  bool     `json:"has_citations_section"`

	hasTable bool
}

type llmScores struct {
	FactualAccuracy int `json:"factual_accuracy"`
	Completeness    int `json:"completeness"`
	Coherence       int `json:"coherence"`
	Relevance       int `json:"relevance"`
	CitationQuality int `json:"citation_quality"`
	WritingQuality  int `json:"writing_quality"`
}

type llmEvaluation struct {
	Scores        llmScores `json:"scores"`
	OverallScore  float64   `json:"overall_score"`
	WeightedScore float64   `json:"weighted_score"`
	Strengths     []string  `json:"strengths"`
	Weaknesses    []string  `json:"weaknesses"`
	Suggestions   []string  `json:"suggestions"`
}

type evaluation struct {
	Metrics       reportMetrics  `json:"metrics"`
	Score         float64        `json:"score"`
	Grade         string         `json:"grade"`
	LLMEvaluation *llmEvaluation `json:"llm_evaluation"`
	Summary       *string        `json:"summary"`
}

type evaluateRequest struct {
	Content     *string `json:"content"`
	Query       string  `json:"query"`
	ReportStyle string  `json:"report_style"`
	UseLLM      bool    `json:"use_llm"`
}

func (h *Handlers) reportEvaluate(ctx context.Context, c *app.RequestContext) {
	var req evaluateRequest
	if !h.decodeJSON(c, &req) {
		return
	}
	if req.Content == nil || strings.TrimSpace(*req.Content) == "" {
		writeFieldError(c, consts.StatusUnprocessableEntity, "content", "is required")
		return
	}
	style := strings.ToLower(strings.TrimSpace(req.ReportStyle))
	if _, ok := styleSections[style]; !ok {
		style = "default"
	}
	m := computeMetrics(*req.Content, style)
	score := metricsScore(m, style)
	ev := evaluation{Metrics: m, Score: score, Grade: gradeFor(score)}
	if req.UseLLM {
		le, summary, err := h.llmEvaluate(ctx, *req.Content, req.Query, style)
		if err != nil {
			h.opts.Logger.WarnContext(ctx, "LLM report evaluation failed", "err", err)
			s := "LLM evaluation failed (" + err.Error() + "); the score is based on the automatic metrics only."
			ev.Summary = &s
		} else {
			ev.LLMEvaluation = le
			ev.Score = round1(0.4*score + 0.6*le.WeightedScore)
			ev.Grade = gradeFor(ev.Score)
			ev.Summary = &summary
		}
	}
	writeJSON(c, consts.StatusOK, ev)
}

// computeMetrics measures a markdown report. Fenced code is ignored so that examples do not count as headings
// or citations.
func computeMetrics(content, style string) reportMetrics {
	m := reportMetrics{SectionsFound: []string{}, SectionsMissing: []string{}}
	var prose strings.Builder
	var headings []string
	fence := ""
	titleSeen := false
	for _, line := range strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		prose.WriteString(line)
		prose.WriteByte('\n')
		if reTable.MatchString(trimmed) {
			m.hasTable = true
		}
		if hm := reHeading.FindStringSubmatch(trimmed); hm != nil {
			level := len(hm[1])
			if level == 2 {
				m.SectionCount++
			}
			if level == 1 && !titleSeen {
				titleSeen = true
				continue // the title's words would otherwise look like section names
			}
			headings = append(headings, strings.ToLower(hm[2]))
			continue
		}
		if bm := reBold.FindStringSubmatch(trimmed); bm != nil {
			headings = append(headings, strings.ToLower(bm[1]))
		}
	}
	text := prose.String()
	m.HasTitle = titleSeen

	m.ImageCount = len(reImage.FindAllString(text, -1)) + len(reHTMLImg.FindAllString(text, -1))
	noImages := reImage.ReplaceAllString(text, " ")
	domains := map[string]bool{}
	for _, lm := range reLink.FindAllStringSubmatch(noImages, -1) {
		m.CitationCount++
		if u, err := url.Parse(lm[2]); err == nil && u.Hostname() != "" {
			domains[strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")] = true
		}
	}
	m.UniqueSources = len(domains)

	plain := reLink.ReplaceAllString(noImages, "$1")
	plain = reBareURL.ReplaceAllString(plain, " ")
	plain = reHTMLTag.ReplaceAllString(plain, " ")
	m.WordCount = countWords(plain)

	expected := styleSections[style]
	for _, sec := range expected {
		if sectionPresent(sec, m.HasTitle, headings) {
			m.SectionsFound = append(m.SectionsFound, sec)
		} else {
			m.SectionsMissing = append(m.SectionsMissing, sec)
		}
	}
	if len(expected) > 0 {
		m.SectionCoverageScore = round2(float64(len(m.SectionsFound)) / float64(len(expected)))
	}
	m.HasKeyPoints = sectionPresent("key_points", m.HasTitle, headings)
	m.HasOverview = sectionPresent("overview", m.HasTitle, headings)
	m.HasCitationsSection = sectionPresent("references", m.HasTitle, headings)
	return m
}

func sectionPresent(section string, hasTitle bool, headings []string) bool {
	if section == "title" {
		return hasTitle
	}
	for _, hd := range headings {
		for _, kw := range sectionKeywords[section] {
			if strings.Contains(hd, kw) {
				return true
			}
		}
	}
	return false
}

// countWords counts runs of letters and digits as words and every CJK character as one word, so that Chinese
// and English reports of similar substance get similar counts.
func countWords(s string) int {
	n := 0
	inWord := false
	for _, r := range s {
		switch {
		case isCJKRune(r):
			n++
			inWord = false
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			if !inWord {
				n++
				inWord = true
			}
		case inWord && (r == '\'' || r == '’' || r == '-'):
			// contractions and hyphenated compounds are one word
		default:
			inWord = false
		}
	}
	return n
}

func isCJKRune(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// metricsScore turns the metrics into 0..10: structure 3.5, length 2, citations 2, source diversity 1.5,
// references section 0.5, images or tables 0.5.
func metricsScore(m reportMetrics, style string) float64 {
	s := 3 * m.SectionCoverageScore
	if m.HasTitle {
		s += 0.5
	}
	if target := styleTargetWords[style]; target > 0 {
		s += 2 * math.Min(1, float64(m.WordCount)/float64(target))
	}
	s += 2 * math.Min(1, float64(m.CitationCount)/8)
	s += 1.5 * math.Min(1, float64(m.UniqueSources)/5)
	if m.HasCitationsSection {
		s += 0.5
	}
	if m.ImageCount > 0 || m.hasTable {
		s += 0.5
	}
	return round1(math.Min(10, s))
}

func gradeFor(score float64) string {
	for _, g := range gradeFloors {
		if score >= g.min {
			return g.grade
		}
	}
	return "F"
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
func round2(f float64) float64 { return math.Round(f*100) / 100 }

const evalSystemPrompt = `You are a strict reviewer of research reports. Judge the report against the research question it answers; the intended style is %s.

Score each criterion with an integer from 1 (poor) to 10 (excellent):
- factual_accuracy: claims are plausible, internally consistent and backed by the cited sources
- completeness: the important aspects of the question are covered
- coherence: logical structure and flow
- relevance: the report stays on the question
- citation_quality: sources are specific and credible and support the claims that need them
- writing_quality: clear, precise and suited to the style's audience

Reply with exactly one JSON object and nothing else:
{"scores":{"factual_accuracy":0,"completeness":0,"coherence":0,"relevance":0,"citation_quality":0,"writing_quality":0},"overall_score":0,"strengths":["..."],"weaknesses":["..."],"suggestions":["..."],"summary":"two or three sentences"}

Write strengths, weaknesses, suggestions and summary in the language of the report.`

// evalReportTokens bounds the report sent for review so that long reports still fit common context windows.
const evalReportTokens = 24000

func (h *Handlers) llmEvaluate(ctx context.Context, content, query, style string) (*llmEvaluation, string, error) {
	if h.opts.LLM == nil {
		return nil, "", errors.New("no language model is configured")
	}
	m := h.opts.LLM.Chat(compatRole)
	if m == nil {
		return nil, "", errors.New("no language model is configured")
	}
	q := strings.TrimSpace(query)
	if q == "" {
		q = "(not given; infer it from the report)"
	}
	msgs := []*schema.Message{
		schema.SystemMessage(fmt.Sprintf(evalSystemPrompt, strings.ReplaceAll(style, "_", " "))),
		schema.UserMessage("Research question:\n" + q + "\n\nReport:\n" + llm.TrimToTokens(content, evalReportTokens)),
	}
	out, err := m.Generate(ctx, msgs)
	if err != nil {
		return nil, "", fmt.Errorf("the language model call failed: %w", err)
	}
	return parseLLMEvaluation(out.Content)
}

// parseLLMEvaluation reads the reviewer's JSON, tolerating fences, a reasoning preamble and numbers sent as
// strings. All six criteria are required; a partial answer would make weighted_score meaningless.
func parseLLMEvaluation(s string) (*llmEvaluation, string, error) {
	if i := strings.LastIndex(s, "</think>"); i >= 0 {
		s = s[i+len("</think>"):]
	}
	start := strings.IndexByte(s, '{')
	if start < 0 {
		return nil, "", errors.New("the model's answer contained no JSON object")
	}
	var raw struct {
		Scores       map[string]any `json:"scores"`
		OverallScore any            `json:"overall_score"`
		Strengths    []any          `json:"strengths"`
		Weaknesses   []any          `json:"weaknesses"`
		Suggestions  []any          `json:"suggestions"`
		Summary      any            `json:"summary"`
	}
	if err := json.NewDecoder(strings.NewReader(s[start:])).Decode(&raw); err != nil {
		end := strings.LastIndexByte(s, '}')
		if end <= start || json.Unmarshal([]byte(s[start:end+1]), &raw) != nil {
			return nil, "", fmt.Errorf("the model's answer was not valid JSON: %w", err)
		}
	}
	got := map[string]int{}
	weighted := 0.0
	sum := 0
	for _, w := range llmWeights {
		v, ok := number(raw.Scores[w.key])
		if !ok {
			return nil, "", fmt.Errorf("the model's answer has no score for %s", w.key)
		}
		n := int(math.Round(math.Max(0, math.Min(10, v))))
		got[w.key] = n
		sum += n
		weighted += w.weight * float64(n)
	}
	overall, ok := number(raw.OverallScore)
	if !ok {
		overall = float64(sum) / float64(len(llmWeights))
	}
	le := &llmEvaluation{
		Scores: llmScores{
			FactualAccuracy: got["factual_accuracy"], Completeness: got["completeness"], Coherence: got["coherence"],
			Relevance: got["relevance"], CitationQuality: got["citation_quality"], WritingQuality: got["writing_quality"],
		},
		OverallScore:  round1(math.Max(0, math.Min(10, overall))),
		WeightedScore: round1(weighted),
		Strengths:     stringsOf(raw.Strengths),
		Weaknesses:    stringsOf(raw.Weaknesses),
		Suggestions:   stringsOf(raw.Suggestions),
	}
	summary := ""
	if str, isStr := raw.Summary.(string); isStr {
		summary = strings.TrimSpace(str)
	}
	if summary == "" {
		summary = fmt.Sprintf("The reviewer model rated the report %.1f/10 overall.", le.OverallScore)
	}
	return le, summary, nil
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false
		}
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	default:
		return 0, false
	}
}

func stringsOf(items []any) []string {
	out := []string{}
	for _, it := range items {
		if s, ok := it.(string); ok && strings.TrimSpace(s) != "" {
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}
