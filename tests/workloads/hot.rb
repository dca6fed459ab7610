# SPDX-License-Identifier: Apache-2.0
# hot.rb - a Ruby workload with a known CPU split for the agent's
# interpreter-frame tests: work_a, work_b and Outer#run (called from a
# block) share the CPU 5:3:2 by construction; each round's CPU time is
# measured by the program itself (per-thread CPU clock) and the shares
# printed at the end, so the test compares the agent's shares with the
# program's own. Usage: ruby hot.rb SECONDS

def spin(n)
  x = 0
  i = 0
  while i < n
    x += i * i
    i += 1
  end
  x
end

def work_a(n)
  spin(n)
end

def work_b(n)
  spin(n)
end

class Outer
  def run(n)
    spin(n)
  end
end

def clock
  Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
end

def main
  secs = Float(ARGV[0])
  spent = { "work_a" => 0.0, "work_b" => 0.0, "Outer#run" => 0.0 }
  o = Outer.new
  end_at = clock + secs
  while clock < end_at
    t = clock
    work_a(50_000)
    spent["work_a"] += clock - t
    t = clock
    work_b(30_000)
    spent["work_b"] += clock - t
    [20_000].each do |n|
      t = clock
      o.run(n)
      spent["Outer#run"] += clock - t
    end
  end
  total = spent.values.sum
  spent.each { |k, v| printf("%s %.4f\n", k, total > 0 ? v / total : 0) }
  $stdout.flush
end

main
