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
        $record = Get-ErrorRecord (Get-InnerException $_.Exception)
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
        $failure = Get-ErrorRecord (Get-InnerException $_.Exception)
    } finally {
        $proxy.SetVariable('ErrorActionPreference', $savedPreference)
    }
    if ($null -ne $failure) {
        Send-Failure $Id 'startup' $failure.ToString() (ConvertTo-ErrorInfo $failure $true)
        return
    }

    # Where the time goes, per step, for the profile in bench/ (ms, cumulative).
    $spans = [ordered]@{ modulesAndScript = $watch.Elapsed.TotalMilliseconds }
    $script:WorkerSessionState = Invoke-WorkerScript { $ExecutionContext.SessionState } @()
    $spans['sessionState'] = $watch.Elapsed.TotalMilliseconds
    $script:Snapshot = Invoke-WorkerScript $SnapshotScript @(, (Get-GlobalAlias))
    $spans['snapshot'] = $watch.Elapsed.TotalMilliseconds
    $script:StrictMode = Get-GlobalStrictMode
    $script:EnvSnapshot = Get-EnvSnapshot
    Save-CleanFingerprint
    $spans['fingerprint'] = $watch.Elapsed.TotalMilliseconds
    Send-Response $Id ([ordered]@{ modules = $modules; durationMs = $watch.ElapsedMilliseconds; spans = $spans })
}

function New-Credential($Value) {
    if ($Value -isnot [System.Collections.IDictionary]) { throw 'A credential must be an object with UserName and Password.' }
    # NetworkCredential accepts an empty password, which ConvertTo-SecureString -String rejects.
    $secure = [System.Net.NetworkCredential]::new('', [string]$Value['Password']).SecurePassword
    return [System.Management.Automation.PSCredential]::new([string]$Value['UserName'], $secure)
}

function Start-Invoke($Id, [hashtable]$Params) {
    $command = $Params['command']
    if ($command -isnot [string] -or $command.Length -eq 0) { throw 'The invoke request names no command.' }
    $depth = 4
    if ($null -ne $Params['depth']) { $depth = [int]$Params['depth'] }
    if ($depth -lt 0 -or $depth -gt 100) { throw "Depth $depth is outside 0..100, the range ConvertTo-Json accepts." }
    $parameters = $Params['parameters']
    if ($null -ne $parameters -and $parameters -isnot [hashtable]) { throw 'The invoke parameters are not an object.' }
    $credentials = ConvertTo-List $Params['credentials']
    $select = $Params['select']
    if ($null -ne $select -and $select -isnot [hashtable]) { throw 'The invoke select is not an object.' }
    $progress = $Params['progress'] -eq $true
    $first = $null
    if ($null -ne $Params['first']) {
        $first = [int]$Params['first']
        if ($first -lt 1) { throw "First $first is not a positive count." }
    }

    $ps = [powershell]::Create($script:Worker)
    try {
        $null = $ps.AddCommand($command)
        if ($null -ne $parameters) {
            foreach ($name in @($parameters.Keys)) {
                $value = $parameters[$name]
                if ($value -is [System.Collections.IDictionary] -or $value -is [object[]]) { $value = ConvertTo-PlainJsonValue $value }
                if ($null -ne $value -and $credentials -contains $name) { $value = New-Credential $value }
                $null = $ps.AddParameter([string]$name, $value)
            }
        }
        # One item past the limit says whether more exist; Select-Object then stops the command.
        if ($null -ne $first) { $null = $ps.AddCommand('Microsoft.PowerShell.Utility\Select-Object').AddParameter('First', $first + 1) }
        # A completed, empty input collection: the command gets no pipeline input. The output
        # collection is ours, so objects written before a Stop or a terminating error survive.
        $pipelineInput = [System.Management.Automation.PSDataCollection[psobject]]::new()
        $pipelineInput.Complete()
        $output = [System.Management.Automation.PSDataCollection[psobject]]::new()
        # Progress records are stored only under Continue; the worker runs with SilentlyContinue so
        # that calls nobody watches keep none. The saved value is put back when the call ends.
        $savedProgress = $null
        if ($progress) {
            $savedProgress = $script:Worker.SessionStateProxy.GetVariable('ProgressPreference')
            $script:Worker.SessionStateProxy.SetVariable('ProgressPreference', [System.Management.Automation.ActionPreference]::Continue)
        }
        $watch = [System.Diagnostics.Stopwatch]::StartNew()
        $task = $ps.InvokeAsync($pipelineInput, $output)
    } catch {
        $ps.Dispose()
        throw
    }
    $script:Running = [pscustomobject]@{
        Id = $Id; PowerShell = $ps; Task = $task; Output = $output; Depth = $depth; Watch = $watch; StopRequested = $false
        Select = $select; First = $first; Progress = $progress; SavedProgress = $savedProgress
    }
}

function Stop-Running {
    $run = $script:Running
    if ($null -eq $run -or $run.StopRequested) { return }
    $run.StopRequested = $true
    # BeginStop returns at once; Stop() would block the loop (and can deadlock on a stuck prompt).
    try { $null = $run.PowerShell.BeginStop($null, $null) } catch { Write-Diag "stop failed: $((Get-InnerException $_.Exception).Message)" }
}

function ConvertTo-OutputJson($Items, [int]$Depth) {
    # Type-data script properties run in this scope while ConvertTo-Json reads them; they are written
    # for non-strict code, so keep the host's strict mode away from them.
    Set-StrictMode -Off
    $parts = [System.Collections.Generic.List[string]]::new()
    foreach ($item in $Items) {
        if ($null -eq $item) { $parts.Add('null'); continue }
        $json = $null
        try {
            $json = ConvertTo-Json -InputObject $item -Depth $Depth -Compress -EnumsAsStrings -WarningAction SilentlyContinue
        } catch {
            $text = $null
            try { $text = $item.ToString() } catch { $text = $item.PSObject.BaseObject.GetType().FullName }
            $json = ConvertTo-Json -InputObject ([string]$text) -Compress
        }
        if ($null -eq $json) { $json = 'null' }
        $parts.Add($json)
    }
    return , $parts
}

# Sends the newest progress record of the running call, if any came since the last look: one
# frame per turn of the slot loop (every 100 ms at most) however fast the command writes them.
function Send-RunningProgress {
    $run = $script:Running
    $records = $run.PowerShell.Streams.Progress.ReadAll()
    if ($records.Count -eq 0) { return }
    $record = $records[$records.Count - 1]
    Send-Frame ([System.Text.Json.JsonSerializer]::Serialize([ordered]@{
                type      = 'progress'
                id        = [long]$run.Id
                activity  = [string]$record.Activity
                status    = [string]$record.StatusDescription
                operation = Get-NonEmpty $record.CurrentOperation
                percent   = [int]$record.PercentComplete
                completed = $record.RecordType -eq [System.Management.Automation.ProgressRecordType]::Completed
            }, [System.Collections.Specialized.OrderedDictionary]))
}

function Complete-Invoke {
    $run = $script:Running
    $script:Running = $null
    $ps = $run.PowerShell
    try {
        if ($run.Progress) { $script:Worker.SessionStateProxy.SetVariable('ProgressPreference', $run.SavedProgress) }
        $run.Watch.Stop()
        $stopped = $ps.InvocationStateInfo.State -eq [System.Management.Automation.PSInvocationState]::Stopped
        # The task is built over EndInvoke; its AggregateException holds what EndInvoke threw.
        $terminating = $null
        if ($run.Task.IsFaulted -and $null -ne $run.Task.Exception) { $terminating = $run.Task.Exception.InnerException }
        $terminatingRecord = $null
        if ($null -ne $terminating -and -not ($stopped -and $terminating -is [System.Management.Automation.PipelineStoppedException])) {
            $terminatingRecord = Get-ErrorRecord $terminating
        }
        $errors = [System.Collections.Generic.List[object]]::new()
        foreach ($record in $ps.Streams.Error.ReadAll()) {
            if ($null -ne $terminatingRecord -and [object]::ReferenceEquals($record, $terminatingRecord)) { continue }
            $errors.Add((ConvertTo-ErrorInfo $record $false))
        }
        if ($null -ne $terminatingRecord) { $errors.Add((ConvertTo-ErrorInfo $terminatingRecord $true)) }

        $result = [ordered]@{
            errors      = $errors
            warnings    = @(foreach ($r in $ps.Streams.Warning.ReadAll()) { $r.Message })
            verbose     = @(foreach ($r in $ps.Streams.Verbose.ReadAll()) { $r.Message })
            debug       = @(foreach ($r in $ps.Streams.Debug.ReadAll()) { $r.Message })
            information = @(foreach ($r in $ps.Streams.Information.ReadAll()) {
                    [ordered]@{ message = [string]$r.MessageData; tags = @($r.Tags); source = $r.Source }
                })
            hadErrors   = $ps.HadErrors
            stopped     = $stopped
            durationMs  = $run.Watch.ElapsedMilliseconds
        }
        $items = $run.Output.ReadAll()
        if ($null -ne $run.First -or $null -ne $run.Select) {
            $shape = [ordered]@{ moreResults = $false }
            if ($null -ne $run.First -and $items.Count -gt $run.First) {
                $items = @($items)[0..($run.First - 1)]
                $shape['moreResults'] = $true
            }
            if ($null -ne $run.Select) {
                $projected = Select-OutputProperty $items $run.Select
                $items = $projected.Items
                $shape['types'] = $projected.Report['types']
                $shape['unknownProperties'] = $projected.Report['unknownProperties']
            }
            $result['shape'] = $shape
        }
        # Output items are already JSON; splice them in rather than encode them a second time.
        $items = ConvertTo-OutputJson $items $run.Depth
        # Without error records the envelope holds only strings, numbers and booleans, which
        # System.Text.Json encodes in a twentieth of ConvertTo-Json's time; error records carry
        # values straight from PowerShell objects, so they keep ConvertTo-Json.
        $rest = if ($errors.Count -eq 0) {
            [System.Text.Json.JsonSerializer]::Serialize($result, [System.Collections.Specialized.OrderedDictionary])
        } else {
            ConvertTo-Json -InputObject $result -Depth 10 -Compress
        }
        Send-Frame ('{"id":' + [long]$run.Id + ',"ok":true,"result":{"output":[' + ($items -join ',') + '],' + $rest.Substring(1) + '}')
    } catch {
        $record = Get-ErrorRecord (Get-InnerException $_.Exception)
        Send-Failure $run.Id 'internal' $record.ToString() (ConvertTo-ErrorInfo $record $true)
    } finally {
        $ps.Dispose()
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
    try { $frame = ConvertFrom-FrameJson $Line } catch { $frame = $null }
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
        $record = Get-ErrorRecord (Get-InnerException $_.Exception)
        Send-Failure $id 'internal' $record.ToString() (ConvertTo-ErrorInfo $record $true)
    }
}
