# svc worker, part of lib/host.ps1 (dot-sourced by it): the worker runspace and the operations on it (startup, invoke, stop, frames).

function New-WorkerRunspace {
    # CreateDefault2 is what the console host uses: only Core is loaded, the rest autoloads, so built-in
    # commands report the same Module/Version as in an interactive pwsh. No host is passed: the runspace
    # gets DefaultHost, whose prompts (Read-Host, Get-Credential, confirmations) fail at once.
    $iss = [System.Management.Automation.Runspaces.InitialSessionState]::CreateDefault2()
    $runspace = [System.Management.Automation.Runspaces.RunspaceFactory]::CreateRunspace($iss)
    # One pipeline thread for the runspace's life rather than a new thread per invocation: a no-op
    # call 2.98 -> 2.15 ms on pwsh 7.6.5. A call that ignores Stop blocks that thread, but such a
    # worker is killed anyway.
    $runspace.ThreadOptions = [System.Management.Automation.Runspaces.PSThreadOptions]::ReuseThread
    $runspace.Open()
    # Verbose and debug records are kept only under Continue (nothing is printed without a host UI);
    # TypeScript decides what to show. Progress records are never reported, so do not store them.
    $runspace.SessionStateProxy.SetVariable('VerbosePreference', [System.Management.Automation.ActionPreference]::Continue)
    $runspace.SessionStateProxy.SetVariable('DebugPreference', [System.Management.Automation.ActionPreference]::Continue)
    $runspace.SessionStateProxy.SetVariable('ProgressPreference', [System.Management.Automation.ActionPreference]::SilentlyContinue)
    return $runspace
}

# Loading Utility and Management takes about 200 ms in a new runspace, and every worker needs them
# (the snapshot uses them, as do most calls). Started here, it runs while the host connects and
# says hello, which loads Utility in the host runspace at the same time.
function Start-WorkerPreload {
    $ps = [powershell]::Create($script:Worker)
    $null = $ps.AddCommand('Microsoft.PowerShell.Core\Import-Module').AddParameter('Name', [string[]]@('Microsoft.PowerShell.Utility', 'Microsoft.PowerShell.Management'))
    $script:Preload = [pscustomobject]@{ PowerShell = $ps; Result = $ps.BeginInvoke() }
}

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
        Send-Failure $Id 'startup' $failure.ToString() ([Svc.Host.ErrorInfo]::From($failure, $true))
        return
    }

    # Where the time goes, per step, for the profile in bench/ (ms, cumulative).
    $spans = [ordered]@{ modulesAndScript = $watch.Elapsed.TotalMilliseconds }
    $script:WorkerSessionState = Invoke-WorkerScript { $ExecutionContext.SessionState } @()
    $spans['sessionState'] = $watch.Elapsed.TotalMilliseconds
    $script:Snapshot = Invoke-WorkerScript $SnapshotScript @(, (Get-GlobalAlias))
    $spans['snapshot'] = $watch.Elapsed.TotalMilliseconds
    $script:StrictMode = Get-GlobalStrictMode
    $script:EnvSnapshot = [Svc.Host.EnvironmentSnapshot]::Take()
    Save-CleanFingerprint
    $spans['fingerprint'] = $watch.Elapsed.TotalMilliseconds
    Send-Response $Id ([ordered]@{ modules = $modules; durationMs = $watch.ElapsedMilliseconds; spans = $spans })
}

function Start-Invoke($Id, [hashtable]$Params) {
    $script:Running = [Svc.Host.Invocation]::Start($script:Worker, [long]$Id, $Params)
}

function Stop-Running {
    $run = $script:Running
    if ($null -eq $run) { return }
    try { $run.Stop() } catch { Write-Diag "stop failed: $((Get-InnerException $_.Exception).Message)" }
}

# Sends the newest progress record of the running call, if any came since the last look: one
# frame per turn of the slot loop (every 100 ms at most) however fast the command writes them.
function Send-RunningProgress {
    $frame = $script:Running.TakeProgressFrame()
    if ($null -ne $frame) { Send-Frame $frame }
}

# The response is encoded by the compiled half, which reads type-data script properties; they are
# written for non-strict code, so the host's strict mode is kept away from them (this scope is where
# they look it up).
function ConvertTo-InvokeResponse([Svc.Host.Invocation]$Run, $Items) {
    Set-StrictMode -Off
    return $Run.ToResponse($Items)
}

function Complete-Invoke {
    $run = $script:Running
    $script:Running = $null
    try {
        $items = $run.TakeOutput()
        if ($null -ne $run.Select) {
            $projected = Select-OutputProperty $items $run.Select
            $items = $projected.Items
            $run.SetProjectionReport($projected.Report['types'], $projected.Report['unknownProperties'])
        }
        Send-Frame (ConvertTo-InvokeResponse $run $items)
    } catch {
        Send-ExceptionFailure $run.Id 'internal' $_.Exception
    } finally {
        $run.Dispose()
    }
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

function Invoke-Frame([string]$Line) {
    $frame = $null
    try { $frame = [Svc.Host.FrameJson]::ParseObject($Line) } catch { $frame = $null }
    if ($frame -isnot [hashtable]) {
        # Only a leading top-level id is trusted: a stop notification carries its target id in params.
        if ($Line -match '^\s*\{\s*"id"\s*:\s*(-?\d{1,18})\s*[,}]') {
            Send-Failure ([long]$Matches[1]) 'protocol' 'The frame is not a valid JSON object.' $null
        } else {
            Write-Diag 'dropped a frame that is not a JSON object'
        }
        return
    }
    $id = $frame['id']
    $op = $frame['op']
    $params = $frame['params']

    if ($op -ceq 'stop') {
        $target = if ($params -is [hashtable]) { $params['id'] } else { $null }
        if ($null -ne $script:Running -and $null -ne $target -and $target -eq $script:Running.Id) { Stop-Running }
        return
    }
    if ($op -ceq 'open') {
        $slot = if ($params -is [hashtable]) { $params['slot'] } else { $null }
        if (($slot -is [int] -or $slot -is [long]) -and $slot -gt 0 -and $slot -le [int]::MaxValue) { Open-Slot ([int]$slot) } else { Write-Diag 'dropped an open frame without a positive integer slot' }
        return
    }
    if (-not ($id -is [int] -or $id -is [long])) {
        Write-Diag 'dropped a frame without an integer id'
        return
    }
    if ($op -isnot [string]) { Send-Failure $id 'protocol' 'The frame has no op.' $null; return }
    if ($null -eq $params) { $params = @{} }
    if ($params -isnot [hashtable]) { Send-Failure $id 'protocol' 'The params of the frame are not an object.' $null; return }
    if ($null -ne $script:Running) { Send-Failure $id 'busy' 'Another request is running.' $null; return }
    Complete-WorkerPreload

    try {
        switch -CaseSensitive ($op) {
            'startup' { Invoke-Startup $id $params }
            'commands' {
                $names = ConvertTo-List $params['names']
                # Get-Command -Module takes names: a configured path becomes the name startup imported from it.
                $modules = @(foreach ($entry in (ConvertTo-List $params['modules'])) {
                        $via = [string]$entry
                        $name = if ($script:ModuleNames.ContainsKey($via)) { $script:ModuleNames[$via] } else { $via }
                        @{ Name = $name; Via = $via }
                    })
                $patterns = ConvertTo-List $params['patterns']
                Send-Response $id (Invoke-WorkerScript $CommandsScript @($names, $modules, $patterns))
            }
            'describe' {
                $names = ConvertTo-List $params['names']
                $withHelp = $true
                if ($params.ContainsKey('help')) { $withHelp = [bool]$params['help'] }
                Send-Response $id (Invoke-WorkerScript $DescribeScript @($names, $withHelp))
            }
            'invoke' { Start-Invoke $id $params }
            'reset' { Invoke-Reset $id }
            'exit' { Send-Response $id ([ordered]@{}); $script:Quit = $true }
            default { Send-Failure $id 'unknown-op' "Unknown op '$op'." $null }
        }
    } catch {
        Send-ExceptionFailure $id 'internal' $_.Exception
    }
}
