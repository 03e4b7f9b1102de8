package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
)

// ToolName is the name the coder agent's prompts refer to.
const ToolName = "python_repl_tool"

const toolDesc = "Execute Python 3 code for data analysis or calculations. " +
	"Only what the code prints is returned, so print(...) every value you need to see. " +
	"Each call starts a fresh interpreter: no state carries over between calls."

type pythonTool struct {
	r *Runner
}

// NewTool exposes r as the eino tool "python_repl_tool" taking {"code": string}.
// Execution failures, timeouts and a disabled runner come back as the tool's
// text result so the model can react; only malformed arguments or a cancelled
// context are returned as errors.
func NewTool(r *Runner) tool.InvokableTool {
	return &pythonTool{r: r}
}

func (t *pythonTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{
		Name: ToolName,
		Desc: toolDesc,
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"code": {
				Type:     schema.String,
				Desc:     "The Python code to execute.",
				Required: true,
			},
		}),
	}, nil
}

type toolArgs struct {
	Code *string `json:"code"`
}

func (t *pythonTool) InvokableRun(ctx context.Context, argumentsInJSON string, _ ...tool.Option) (string, error) {
	var args toolArgs
	if err := json.Unmarshal([]byte(argumentsInJSON), &args); err != nil {
		return "", fmt.Errorf("%s: invalid arguments: %w", ToolName, err)
	}
	if args.Code == nil || strings.TrimSpace(*args.Code) == "" {
		return "", fmt.Errorf("%s: argument \"code\" is required", ToolName)
	}
	code := *args.Code
	res, err := t.r.Run(ctx, code)
	switch {
	case errors.Is(err, ErrDisabled):
		return formatFailure(code, "Python execution is disabled on this server (set ENABLE_PYTHON_REPL=true)"), nil
	case err != nil && ctx.Err() != nil:
		return "", err
	case err != nil:
		return formatFailure(code, err.Error()), nil
	case res.TimedOut:
		msg := fmt.Sprintf("timed out after %s", t.r.Timeout())
		if res.Stderr != "" {
			msg += "\n" + res.Stderr
		}
		return formatFailure(code, msg), nil
	case res.ExitCode != 0:
		msg := res.Stderr
		if strings.TrimSpace(msg) == "" {
			msg = exitText(res.ExitCode)
		}
		return formatFailure(code, msg), nil
	default:
		return formatSuccess(code, res.Stdout), nil
	}
}

func exitText(code int) string {
	if code < 0 {
		return "process was killed by a signal"
	}
	return fmt.Sprintf("process exited with status %d", code)
}

// The two layouts below are parsed by the web UI; keep them byte-exact.

func formatSuccess(code, stdout string) string {
	return "Successfully executed:\n```python\n" + code + "\n```\nStdout: " + stdout
}

func formatFailure(code, msg string) string {
	return "Error executing code:\n```python\n" + code + "\n```\nError: " + msg
}
