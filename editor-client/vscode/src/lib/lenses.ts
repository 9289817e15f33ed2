// The server's code lenses name its own workspace commands (sessions/resume, sessions/fork, sessions/tree).
// In VS Code those become the extension's commands, which ask for a title, open the result, and so on.

export interface LensCommand {
  title: string;
  command: string;
  arguments?: unknown[];
}

const MAP: Record<string, string> = {
  'sessions/resume': 'sessionLsp.resumeInTerminal',
  'sessions/fork': 'sessionLsp.forkSession',
  'sessions/tree': 'sessionLsp.revealInView',
  'sessions/chain': 'sessionLsp.openConversation',
  'sessions/runTurn': 'sessionLsp.runAgentTurn',
};

export function rewriteLensCommand(cmd: LensCommand | undefined): LensCommand | undefined {
  if (!cmd || !(cmd.command in MAP)) {
    return cmd;
  }
  const arg = cmd.arguments?.[0];
  const valid = !!arg && typeof arg === 'object' && typeof (arg as { sessionId?: unknown }).sessionId === 'string';
  return { title: cmd.title, command: MAP[cmd.command], arguments: valid ? [arg] : [] };
}
