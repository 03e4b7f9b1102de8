package model

// Agent names: graph nodes and the wire `agent` field.
const (
	AgentCoordinator   = "coordinator"
	AgentBackground    = "background_investigator"
	AgentPlanner       = "planner"
	AgentHumanFeedback = "human_feedback"
	AgentResearchTeam  = "research_team"
	AgentResearcher    = "researcher"
	AgentAnalyst       = "analyst"
	AgentCoder         = "coder"
	AgentReporter      = "reporter"
)

// Step types and the agent that runs each.
const (
	StepResearch   = "research"
	StepAnalysis   = "analysis"
	StepProcessing = "processing"
)

// Step statuses.
const (
	StatusPending = "pending"
	StatusRunning = "running"
	StatusDone    = "done"
	StatusFailed  = "failed"
)

// Step is one unit of a research plan.
type Step struct {
	ID           string   `json:"id"`
	NeedSearch   bool     `json:"need_search"`
	Title        string   `json:"title"`
	Description  string   `json:"description"`
	StepType     string   `json:"step_type"`
	DependsOn    []string `json:"depends_on,omitempty"`
	Status       string   `json:"status"`
	ExecutionRes string   `json:"execution_res,omitempty"`
	Error        string   `json:"error,omitempty"`
}

// Finished reports whether the step needs no more work (done or failed).
func (s *Step) Finished() bool { return s.Status == StatusDone || s.Status == StatusFailed }

// Plan is the planner's output.
type Plan struct {
	Locale           string `json:"locale"`
	HasEnoughContext bool   `json:"has_enough_context"`
	Thought          string `json:"thought"`
	Title            string `json:"title"`
	Steps            []Step `json:"steps"`
}

// Message is one turn of a thread's conversation kept on the server.
type Message struct {
	Role    string `json:"role"` // user | assistant
	Agent   string `json:"agent,omitempty"`
	Content string `json:"content"`
	// Kind marks special turns: "feedback" (plan edit), "clarification" (a coordinator question).
	Kind string `json:"kind,omitempty"`
}

// State is the single source of truth of one thread's research, shared by every agent of the graph.
type State struct {
	ThreadID string
	Settings Settings
	Locale   string
	Messages []Message

	ResearchTopic        string
	ClarificationRounds  int
	ClarificationHistory []string
	ClarificationDone    bool

	BackgroundResults string
	Plan              *Plan
	PlanIterations    int
	// PriorSteps are finished steps of earlier plans of this research, kept when the planner replaces a plan.
	PriorSteps []Step
	// PlanFeedback is the user's edit request for the next planner turn.
	PlanFeedback string

	Citations   []Citation
	FinalReport string
	// Outcome says how the last run ended: "answered", "clarifying", "reported", "failed".
	Outcome string
	// Next is the agent that runs next. Saved with every snapshot, it is where a run cut off by a restart resumes.
	Next string
	// Err is the error that ended the run, for the run manager to report.
	Err string
}

// Clone returns a deep copy, so snapshots handed out never alias graph state.
func (s *State) Clone() *State {
	if s == nil {
		return nil
	}
	c := *s
	c.Settings.InterruptBeforeTools = append([]string(nil), s.Settings.InterruptBeforeTools...)
	c.Messages = append([]Message(nil), s.Messages...)
	c.ClarificationHistory = append([]string(nil), s.ClarificationHistory...)
	c.Citations = append([]Citation(nil), s.Citations...)
	for i := range c.Citations {
		ci := &c.Citations[i]
		ci.Agents = append([]string(nil), ci.Agents...)
		if ci.AccessedAt != nil {
			at := *ci.AccessedAt
			ci.AccessedAt = &at
		}
	}
	c.PriorSteps = append([]Step(nil), s.PriorSteps...)
	for i := range c.PriorSteps {
		c.PriorSteps[i].DependsOn = append([]string(nil), c.PriorSteps[i].DependsOn...)
	}
	if s.Plan != nil {
		p := *s.Plan
		p.Steps = make([]Step, len(s.Plan.Steps))
		for i, st := range s.Plan.Steps {
			st.DependsOn = append([]string(nil), st.DependsOn...)
			p.Steps[i] = st
		}
		c.Plan = &p
	}
	return &c
}
