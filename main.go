// Command deer-go is a deep-research service: `deer-go serve` runs the HTTP/SSE server, `deer-go ask` runs one
// research in the terminal.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/deer-go/deer-go/biz/app"
	"github.com/deer-go/deer-go/biz/cli"
	"github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/conf"
)

const usage = `deer-go — deep research over an OpenAI-compatible LLM

Usage:
  deer-go serve [--config conf/config.yaml]
  deer-go ask "question" [--auto-accept] [--style academic|popular_science|news|social_media|strategic_investment]
                         [--locale en-US|zh-CN] [--max-steps N] [--no-background] [--config FILE]

Configuration: conf/config.yaml, .env and environment variables (see conf/config.example.yaml).
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "deer-go:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		args = []string{"serve"}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:])
	case "ask":
		return ask(ctx, args[1:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return nil
	}
	fmt.Fprint(os.Stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func setup(ctx context.Context, path string, stderrOnly bool) (*app.App, error) {
	cfg, err := conf.Load(path)
	if err != nil {
		return nil, err
	}
	var h slog.Handler
	opts := &slog.HandlerOptions{Level: cfg.Log.SlogLevel()}
	if cfg.Log.Format == "json" {
		h = slog.NewJSONHandler(os.Stderr, opts)
	} else {
		h = slog.NewTextHandler(os.Stderr, opts)
	}
	log := slog.New(h)
	if stderrOnly {
		// The terminal shows the research; only warnings go to the log.
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	log.Info("configuration", "config", cfg.String())
	return app.New(ctx, cfg, app.Options{Logger: log})
}

func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "path to config.yaml (default conf/config.yaml if present)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a, err := setup(ctx, *cfgPath, false)
	if err != nil {
		return err
	}
	h := a.Server(nil)
	errc := make(chan error, 1)
	go func() { errc <- h.Run() }()
	a.Logger.Info("deer-go listening", "addr", "http://"+a.Cfg.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.Logger.Info("shutting down", "grace", a.Cfg.Runs.ShutdownGrace)
	// Stop accepting connections and drain the runs at the same time: open streams end with an error event that
	// says the run can be resumed, once their run has reached a checkpoint.
	sctx, cancel := context.WithTimeout(context.Background(), a.Cfg.Runs.ShutdownGrace+15*time.Second)
	defer cancel()
	shutdownErr := make(chan error, 1)
	go func() { shutdownErr <- h.Shutdown(sctx) }()
	a.Runs.Shutdown(sctx, a.Cfg.Runs.ShutdownGrace)
	// The store closes only after the last stream has been written out.
	sErr := <-shutdownErr
	closeErr := a.Close(sctx)
	if sErr != nil && !errors.Is(sErr, context.DeadlineExceeded) {
		return errors.Join(fmt.Errorf("shutdown: %w", sErr), closeErr)
	}
	return closeErr
}

func ask(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "path to config.yaml")
	auto := fs.Bool("auto-accept", false, "accept the plan without review")
	style := fs.String("style", model.StyleAcademic, "report style")
	locale := fs.String("locale", "en-US", "language of the research")
	maxSteps := fs.Int("max-steps", 0, "steps per plan (default from config)")
	noBG := fs.Bool("no-background", false, "skip the background web search before planning")
	// Flags may follow the question.
	var question []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		question = append(question, fs.Arg(0))
		args = fs.Args()[1:]
	}
	q := strings.TrimSpace(strings.Join(question, " "))
	if q == "" {
		return errors.New(`ask needs a question: deer-go ask "your question"`)
	}
	a, err := setup(ctx, *cfgPath, true)
	if err != nil {
		return err
	}
	req := model.ChatRequest{ReportStyle: style, Locale: *locale, AutoAcceptedPlan: auto}
	if *maxSteps > 0 {
		req.MaxStepNum = maxSteps
	}
	if *noBG {
		f := false
		req.EnableBackgroundInvestigation = &f
	}
	content, err := json.Marshal(q)
	if err != nil {
		return err
	}
	req.Messages = []model.ChatMessage{{Role: "user", Content: content}}
	settings, err := req.Validate(model.Defaults{
		MaxPlanIterations: a.Cfg.Research.MaxPlanIterations,
		MaxStepNum:        a.Cfg.Research.MaxStepNum,
		MaxSearchResults:  a.Cfg.Research.MaxSearchResults,
	})
	if err != nil {
		return err
	}
	c := &cli.Ask{Runs: a.Runs, Settings: settings, Question: q, In: os.Stdin, Out: os.Stdout,
		Interactive: term.IsTerminal(int(os.Stdin.Fd()))}
	runErr := c.Run(ctx)
	// On Ctrl-C the run stops at its next checkpoint and can be resumed later from the server.
	closeCtx, cancel := context.WithTimeout(context.Background(), a.Cfg.Runs.ShutdownGrace+5*time.Second)
	defer cancel()
	return errors.Join(runErr, a.Close(closeCtx))
}
