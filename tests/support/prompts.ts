/**
 * Commands offered as MCP prompts, for the tests that get and complete prompts with different
 * clients (`mcp_prompts_test.ts`, `interop_test.ts`): defined by a startup script, with a
 * ValidateSet, an enum, an `[ArgumentCompleter]` that reads the other arguments, a
 * `Register-ArgumentCompleter`, a completer with 150 values (or a hang), role objects, an embedded
 * resource and a failure.
 *
 * @module
 */
import { fixtureConfig } from "./harness.ts";

/** Prompt commands, defined by the startup script. */
const PROMPT_SCRIPT = String.raw`
function New-GreetingCard {
    <#
    .SYNOPSIS
    Asks for a greeting card.
    .PARAMETER Name
    Who the card is for.
    .PARAMETER Occasion
    What the card celebrates.
    .PARAMETER Tone
    How the card sounds.
    #>
    [CmdletBinding()]
    param(
        [Parameter(Mandatory)] [ValidateSet('Alice', 'Bob', 'Carol Ann')] [string] $Name,
        [System.DayOfWeek] $Day = 'Monday',
        [ArgumentCompleter({ param($c, $p, $word, $ast, $bound) foreach ($t in 'warm', 'witty', 'wry') { if ($t -like "$word*") { "$t-for-$($bound['Name'])" } } })]
        [string] $Tone = 'warm',
        [string] $Occasion = 'Thanks',
        [int] $Lines = 2
    )
    "Write a $Tone $Occasion card of $Lines lines for $Name, to arrive on $Day."
    [pscustomobject]@{ Role = 'assistant'; Content = "Dear $Name," }
}

function Get-NoteReview {
    <#
    .SYNOPSIS
    Asks for a review of a note, with the note attached.
    #>
    param([Parameter(Mandatory)] [string] $Text, [string] $Topic, [string] $Count)
    @{ role = 'user'; content = @('Review this note.', @{ type = 'resource'; resource = @{ uri = 'note://current'; mimeType = 'text/plain'; text = $Text } }) }
}
Register-ArgumentCompleter -CommandName Get-NoteReview -ParameterName Count -ScriptBlock { param($c, $p, $word) if ($word -eq 'slow') { Start-Sleep -Seconds 60 }; 1..150 | ForEach-Object { "v$_" } }
Register-ArgumentCompleter -CommandName Get-NoteReview -ParameterName Topic -ScriptBlock { param($c, $p, $word) 'budget', 'backlog', 'birthday' | Where-Object { $_ -like "$word*" } }

function Get-Broken { param([string] $Why) throw "broken: $Why" }
`;

export const PROMPT_CONFIG = fixtureConfig({
  PromptCommands: ["New-GreetingCard", "Get-NoteReview", "Get-Broken", "Get-Missing"],
  Environment: { StartupScript: PROMPT_SCRIPT },
});
