// Which way to start the server: the settings, or the Python extension's interpreter when it has session-lsp.

import { execFile } from 'child_process';
import { DEFAULT_SERVER_COMMAND, serverLaunch, ServerLaunch, ServerSettings, sessionLspVersion } from './command';

export type LaunchSource = 'pythonPath' | 'pythonExtension' | 'serverCommand';

export interface LaunchChoice {
  launch: ServerLaunch;
  source: LaunchSource;
  /** What was tried and not taken, for the output channel. */
  notes: string[];
}

export interface InterpreterSources {
  /** The Python extension's active interpreter; undefined when the extension is not installed or has none. */
  activeInterpreter: () => Promise<string | undefined>;
  /** Undefined when `python -m server.cli --version` says it is session-lsp, else why not. */
  check: (python: string) => Promise<string | undefined>;
}

function isDefaultCommand(launch: ServerLaunch): boolean {
  const argv = [launch.command, ...launch.args];
  return argv.length === DEFAULT_SERVER_COMMAND.length && argv.every((a, i) => a === DEFAULT_SERVER_COMMAND[i]);
}

/**
 * `sessionLsp.pythonPath` when set (checked later, as a setting the person chose); else, unless
 * `sessionLsp.serverCommand` was changed from its default, the Python extension's active interpreter
 * when it passes the `--version` check; else the server command, as without the Python extension.
 */
export async function chooseLaunch(settings: ServerSettings, sources: InterpreterSources): Promise<LaunchChoice> {
  const configured = serverLaunch(settings);
  if (configured.viaPython) {
    return { launch: configured, source: 'pythonPath', notes: [] };
  }
  if (!isDefaultCommand(configured)) {
    return { launch: configured, source: 'serverCommand', notes: [] };
  }
  let python: string | undefined;
  try {
    python = (await sources.activeInterpreter())?.trim();
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return { launch: configured, source: 'serverCommand', notes: [`the Python extension gave no interpreter: ${why}`] };
  }
  if (!python) {
    return { launch: configured, source: 'serverCommand', notes: [] };
  }
  const problem = await sources.check(python);
  if (problem) {
    return {
      launch: configured,
      source: 'serverCommand',
      notes: [`the Python extension's interpreter ${python} was not used: ${problem}`],
    };
  }
  return { launch: serverLaunch({ pythonPath: python }), source: 'pythonExtension', notes: [] };
}

/** Undefined when `python -m server.cli --version` prints session-lsp's version, else why not. */
export function checkPythonModule(python: string, timeoutMs = 20000): Promise<string | undefined> {
  // `import server.cli` passes for any package named `server`: ask ours who it is instead
  return new Promise((resolve) => {
    execFile(python, ['-m', 'server.cli', '--version'], { timeout: timeoutMs }, (err, stdout, stderr) => {
      if (!err && sessionLspVersion(String(stdout))) {
        resolve(undefined);
      } else if (!err) {
        const printed = JSON.stringify(String(stdout).slice(0, 80));
        resolve(`${python} -m server.cli is not session-lsp (it printed ${printed})`);
      } else {
        const last = String(stderr || err.message).trim().split('\n').pop() ?? '';
        resolve(last || 'cannot run server.cli');
      }
    });
  });
}
