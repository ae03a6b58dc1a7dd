# svc worker, part of lib/host.ps1 (dot-sourced by it): the worker runspace and the operations on it (startup, invoke, stop, frames).

# Waits for the preload: the runspace runs one pipeline at a time. A failed preload only costs the
# autoload later.
function Complete-WorkerPreload {
    $preload = $script:Preload
    if ($null -eq $preload) { return }
    $script:Preload = $null
    try { $null = $preload.PowerShell.EndInvoke($preload.Result) } catch { Write-Diag "preloading modules failed: $((Get-InnerException $_.Exception).Message)" }
    $preload.PowerShell.Dispose()
}

# Runs one of the worker scripts (runspace_state.ps1, discovery.ps1) in the worker runspace, in a
# local scope so its variables stay out of the global scope, and returns the object it ends with.
function Invoke-WorkerScript([scriptblock]$Script, [object[]]$ArgumentList) {
    # Script text given to AddScript is parsed and compiled again on every run (15 ms for the reset
    # script on pwsh 7.6); a script block made once in the worker runspace is compiled once.
    $compiled = $script:CompiledScripts[$Script]
    if ($null -eq $compiled) {
        $ps = [powershell]::Create($script:Worker)
        try {
            $null = $ps.AddScript('param($Text) [scriptblock]::Create($Text)', $true).AddArgument($Script.ToString())
            $compiled = $ps.Invoke()[0].PSObject.BaseObject
        } finally {
            $ps.Dispose()
        }
        $script:CompiledScripts[$Script] = $compiled
    }
    $ps = [powershell]::Create($script:Worker)
    try {
        # The call operator runs the block in a new local scope, so its variables stay out of the
        # user's global scope; the splatted array passes each argument positionally.
        $null = $ps.AddScript('param($Script, $Arguments) & $Script @Arguments', $true).AddArgument($compiled).AddArgument($ArgumentList)
        $output = $ps.Invoke()
    } finally {
        $ps.Dispose()
    }
    if ($output.Count -eq 0 -or $null -eq $output[$output.Count - 1]) { throw 'A worker script returned no result.' }
    return $output[$output.Count - 1].PSObject.BaseObject
}

function Import-WorkerModule([string]$Name) {
    $entry = [ordered]@{ name = $Name; found = $false; version = $null; path = $null; error = $null }
    $ps = [powershell]::Create($script:Worker)
    try {
        # Module-qualified so a user function or alias of the same name cannot intercept the call.
        $null = $ps.AddCommand('Microsoft.PowerShell.Core\Import-Module').AddParameter('Name', $Name).AddParameter('Global').AddParameter('PassThru').AddParameter('ErrorAction', 'Stop')
        $loaded = $ps.Invoke()
        $entry['found'] = $true
        if ($loaded.Count -gt 0) {
            $module = $loaded[0].PSObject.BaseObject
            $script:ModuleNames[$Name] = $module.Name
            $entry['version'] = [string]$module.Version
            $entry['path'] = Get-NonEmpty $module.Path
        }
    } catch {
        $record = [Svc.Host.ErrorInfo]::RecordOf((Get-InnerException $_.Exception))
        $entry['error'] = $record.ToString()
        $errorId = ([string]$record.FullyQualifiedErrorId -split ',')[0]
        $entry['found'] = @('Modules_ModuleNotFound', 'Modules_ModuleWithVersionNotFound') -notcontains $errorId
    } finally {
        $ps.Dispose()
    }
    return $entry
}

function Invoke-Startup($Id, [hashtable]$Params) {
    $watch = [System.Diagnostics.Stopwatch]::StartNew()
    $modules = [System.Collections.Generic.List[object]]::new()
    foreach ($name in (ConvertTo-List $Params['modules'])) { $modules.Add((Import-WorkerModule ([string]$name))) }

    # Stop turns every error (throw, -ErrorAction Stop, a failing .NET call) into one that ends the
    # invocation; it is set and restored in the worker's global scope, where the scripts run.
    $proxy = $script:Worker.SessionStateProxy
    $savedPreference = $proxy.GetVariable('ErrorActionPreference')
    $proxy.SetVariable('ErrorActionPreference', [System.Management.Automation.ActionPreference]::Stop)
    $failure = $null
    try {
        $path = $Params['scriptPath']
        if ($path -is [string] -and $path.Length -gt 0) {
            $ps = [powershell]::Create($script:Worker)
            # useLocalScope $false dot-sources the file: its definitions stay global, and
            # $PSScriptRoot and error positions still refer to the file.
            try { $null = $ps.AddCommand($path, $false); $null = $ps.Invoke() } finally { $ps.Dispose() }
        }
        $text = $Params['script']
        if ($text -is [string] -and $text.Length -gt 0) {
            $ps = [powershell]::Create($script:Worker)
            try { $null = $ps.AddScript($text); $null = $ps.Invoke() } finally { $ps.Dispose() }
        }
    } catch {
        $failure = [Svc.Host.ErrorInfo]::RecordOf((Get-InnerException $_.Exception))
    } finally {
        $proxy.SetVariable('ErrorActionPreference', $savedPreference)
    }
    if ($null -ne $failure) {
        $script:Loop.SendFailure($Id, 'startup', $failure)
        return
    }

    # Where the time goes, per step, for the profile in bench/ (ms, cumulative).
    $spans = [ordered]@{ modulesAndScript = $watch.Elapsed.TotalMilliseconds }
    $script:WorkerSessionState = Invoke-WorkerScript { $ExecutionContext.SessionState } @()
    $spans['sessionState'] = $watch.Elapsed.TotalMilliseconds
    $script:Snapshot = Invoke-WorkerScript $SnapshotScript @(, (Get-GlobalAlias))
    $spans['snapshot'] = $watch.Elapsed.TotalMilliseconds
    $script:StrictMode = Get-GlobalStrictMode
    Save-ProcessState ([bool]$Params['keepNativeProcesses'])
    Save-StartupObject
    Save-CleanFingerprint
    $spans['fingerprint'] = $watch.Elapsed.TotalMilliseconds
    # Encoded by the compiled half, like the hello (slot.ps1): strings, numbers and booleans only.
    Send-Frame ([Svc.Host.JsonValue]::SuccessFrame($Id, [ordered]@{ modules = $modules; durationMs = $watch.ElapsedMilliseconds; spans = $spans }))
}

# Starts another slot of this process (lib/host/slot.ps1) in a runspace of its own; it connects and
# says hello by itself. Handled while a call runs, like stop: svc asks whichever slot it has.
function Open-Slot([int]$Slot) {
    $runs = $script:Process['Runs']
    # Slots that have ended are freed here, the one place that adds them.
    foreach ($ended in @($runs.Clone().Keys)) { Receive-SlotRun $runs $ended -Ended }
    $runspace = $null
    $ps = $null
    try {
        $runspace = [System.Management.Automation.Runspaces.RunspaceFactory]::CreateRunspace(
            [System.Management.Automation.Runspaces.InitialSessionState]::CreateDefault2())
        [Svc.Host.ProcessState]::AddHostRunspace($runspace)
        $runspace.Open()
        $ps = [powershell]::Create($runspace)
        $null = $ps.AddCommand($script:Process['SlotScript']).AddParameter('Process', $script:Process).AddParameter('Slot', $Slot)
        $handle = $ps.BeginInvoke()
        $runs[$Slot] = [pscustomobject]@{ PowerShell = $ps; Runspace = $runspace; Handle = $handle }
    } catch {
        $message = (Get-InnerException $_.Exception).Message
        Write-Diag "opening slot $Slot failed: $message"
        if ($null -ne $ps) { $ps.Dispose() }
        if ($null -ne $runspace) { $runspace.Dispose() }
        Send-Frame (ConvertTo-Json -Compress -InputObject ([ordered]@{ type = 'slot-failed'; slot = $Slot; message = $message }))
    }
}

# Every request the slot loop (lib/host/cs/SlotLoop.cs) does not run itself; it has checked the
# frame's shape, that nothing runs, and that $Params is a table. $Id is null for an open frame.
function Invoke-HostRequest($Id, [string]$Op, $Params) {
    if ($Op -ceq 'open') {
        $slot = if ($Params -is [hashtable]) { $Params['slot'] } else { $null }
        if (($slot -is [int] -or $slot -is [long]) -and $slot -gt 0 -and $slot -le [int]::MaxValue) { Open-Slot ([int]$slot) } else { Write-Diag 'dropped an open frame without a positive integer slot' }
        return
    }
    Complete-WorkerPreload
    $script:Loop.Ready = $true

    try {
        switch -CaseSensitive ($Op) {
            'startup' { Invoke-Startup $Id $Params }
            'commands' {
                $names = ConvertTo-List $Params['names']
                # Get-Command -Module takes names: a configured path becomes the name startup imported from it.
                $modules = @(foreach ($entry in (ConvertTo-List $Params['modules'])) {
                        $via = [string]$entry
                        $name = if ($script:ModuleNames.ContainsKey($via)) { $script:ModuleNames[$via] } else { $via }
                        @{ Name = $name; Via = $via }
                    })
                $patterns = ConvertTo-List $Params['patterns']
                Send-Response $Id (Invoke-WorkerScript $CommandsScript @($names, $modules, $patterns))
            }
            'describe' {
                $names = ConvertTo-List $Params['names']
                $withHelp = $true
                if ($Params.ContainsKey('help')) { $withHelp = [bool]$Params['help'] }
                Send-Response $Id (Invoke-WorkerScript $DescribeScript @($names, $withHelp))
            }
            'sources' { Send-Response $Id (Invoke-WorkerScript $SourcesScript @()) }
            'invoke' { $script:Loop.StartInvoke($Id, $Params) }
            'reset' { Invoke-Reset $Id }
            'exit' { Send-Response $Id ([ordered]@{}); $script:Loop.Quit = $true }
            default { Send-Failure $Id 'unknown-op' "Unknown op '$Op'." $null }
        }
    } catch {
        Send-ExceptionFailure $Id 'internal' $_.Exception
    }
}
