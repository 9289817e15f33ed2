// The Python extension's (ms-python.python) active interpreter, through its environments API.

import * as vscode from 'vscode';

const PYTHON_EXTENSION = 'ms-python.python';
const ASK_TIMEOUT_MS = 15000;

interface EnvironmentPath {
  readonly id: string;
  readonly path: string;
}

/** The part of the Python extension's API we use (its `exports.environments`). */
interface PythonEnvironments {
  getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
  resolveEnvironment(env: EnvironmentPath | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
}

async function environments(): Promise<PythonEnvironments | undefined> {
  const ext = vscode.extensions.getExtension<{ environments?: PythonEnvironments }>(PYTHON_EXTENSION);
  if (!ext) {
    return undefined;
  }
  const api = ext.isActive ? ext.exports : await ext.activate();
  return api?.environments;
}

function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took more than ${ASK_TIMEOUT_MS / 1000} s`)), ASK_TIMEOUT_MS);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** The interpreter the Python extension has chosen for the first workspace folder, or undefined. */
export function pythonExtensionInterpreter(): Promise<string | undefined> {
  return withTimeout(
    (async () => {
      const envs = await environments();
      if (!envs) {
        return undefined;
      }
      const active = envs.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
      const resolved = await envs.resolveEnvironment(active);
      return resolved?.executable.uri?.fsPath;
    })(),
    'asking the Python extension for its interpreter',
  );
}

/** Calls `listener` when the Python extension's active interpreter changes (nothing without the extension). */
export async function onPythonInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  try {
    const envs = await environments();
    return envs?.onDidChangeActiveEnvironmentPath?.(() => listener());
  } catch {
    return undefined;
  }
}
