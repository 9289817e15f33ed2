/** The permission prompt of an editor turn (`sessions/permission`): what to ask and how an answer maps. */

import { writtenOut } from './markdownText';

export interface PermissionParams {
  sessionId: string;
  tool: string;
  toolUseId: string;
  input: Record<string, unknown>;
  cwd: string;
  preview: string;
}

export type Decision = 'allow' | 'allowSession' | 'deny';

export const CHOICES = ['Allow once', 'Allow for this session', 'Deny'] as const;

/** The question, its detail (the command, or the edit as a diff) and the buttons. */
export function permissionPrompt(p: PermissionParams): { message: string; detail: string; choices: readonly string[] } {
  const what = p.tool === 'Bash' ? 'run a command' : p.tool === 'Write' ? 'write a file' : p.tool === 'Edit' ? 'edit a file' : `use ${p.tool}`;
  const preview = (p.preview ?? '').length > 4000 ? `${p.preview.slice(0, 4000)}\n…` : p.preview ?? '';
  return {
    message: `Claude wants to ${what} (${p.tool})`,
    // the preview comes written out by the server; the folder is the session's recorded cwd (transcript data)
    detail: `${preview}\n\nin ${writtenOut(p.cwd ?? '')}\nsession ${writtenOut(p.sessionId ?? '')}`,
    choices: CHOICES,
  };
}

/** The button chosen, as the server's decision; closing the dialog denies. */
export function decisionOf(choice: string | undefined): Decision {
  if (choice === CHOICES[0]) {
    return 'allow';
  }
  if (choice === CHOICES[1]) {
    return 'allowSession';
  }
  return 'deny';
}
